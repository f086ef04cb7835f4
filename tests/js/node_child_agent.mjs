// SPDX-License-Identifier: MIT
// A Node agent as a child process of tests/js/node_agent_test.mjs (and of the packed-tarball
// test): runs Roost.agent() from the module named by ROOST_MODULE (default: the repo's
// sdk/js/node.js) and appends "start ID" / "done ID" lines to LOG (fsynced) around a handler
// that sleeps payload.ms. Env: ROOST_SERVER, ROOST_TOKEN, AGENT, STATE_DIR, LOG, CONCURRENCY,
// LEASE_S. Prints "ready" once started.
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';

const mod = await import(process.env.ROOST_MODULE ?? new URL('../../sdk/js/node.js', import.meta.url).href);
const Roost = mod.default;
const log = openSync(process.env.LOG, 'a');
const note = (line) => {
  writeSync(log, `${line}\n`);
  fsyncSync(log);
};
const agent = Roost.agent({
  server: process.env.ROOST_SERVER,
  agentId: process.env.AGENT,
  stateDir: process.env.STATE_DIR,
  getToken: () => process.env.ROOST_TOKEN,
  concurrency: Number(process.env.CONCURRENCY ?? 1),
  lease_s: Number(process.env.LEASE_S ?? 30),
  heartbeat_s: 1,
  handler: async (ev) => {
    note(`start ${ev.event_id}`);
    await new Promise((r) => setTimeout(r, ev.payload?.ms ?? 0));
    note(`done ${ev.event_id}`);
  },
});
agent.addEventListener('error', (e) => console.error(`agent error: ${e.detail.error?.message ?? e.detail.error}`));
process.on('exit', () => closeSync(log));
await agent.start();
console.log('ready');
