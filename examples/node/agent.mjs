// SPDX-License-Identifier: MIT
// A Roost agent in Node >= 20 (doc/NODE.md). In this directory:
//   npm install
//   export ROOST_SERVER=http://127.0.0.1:8080 ROOST_TOKEN=$(roost token mint ... )   # make run prints both
//   node agent.mjs            # Ctrl-C: gives its claims back (release-all) and exits
//   roost publish --agent orders --payload '{"order": 42}'
import Roost from 'roost-agent';

const agent = Roost.agent({
  server: process.env.ROOST_SERVER ?? 'http://127.0.0.1:8080',
  agentId: process.env.ROOST_AGENT ?? 'orders',
  stateDir: process.env.ROOST_STATE_DIR ?? './state',   // cursor, processed ids, leases
  getToken: () => process.env.ROOST_TOKEN,              // or fetch one from your IdP
  concurrency: 4,
  lease_s: 30,
  onState: (state, cursor) => console.log(`resynced at ${cursor}: the events before are gone`, state),
  handler: async (event) => {
    const { order } = event.payload ?? {};
    if (order === undefined) {
      return new Roost.Quarantine('no order in the payload'); // never retried
    }
    if (event.payload.busy) {
      throw new Roost.RetryLater('the warehouse is busy', { retryAfterS: 10 }); // no penalty
    }
    console.log(`order ${order} (attempt ${event.attempts})`);
    // Resolving acks; throwing anything else releases with backoff.
  },
});
agent.addEventListener('statechange', (e) => console.log(`state: ${e.detail.state}`));
agent.addEventListener('error', (e) => console.error('error:', e.detail.error?.message ?? e.detail.error));
await agent.start();
console.log(`agent ${agent.agentId} running as ${agent.consumer}`);
