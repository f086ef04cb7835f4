// SPDX-License-Identifier: MIT
// Signs inbound webhook deliveries the way each sender does, with the sender's own npm library
// (never a hand-made signature): standardwebhooks (OpenAI, Anthropic, Svix), @octokit/webhooks-
// methods (GitHub), stripe (webhooks.generateTestHeaderString). Used by ingest_test.mjs and, as
// a CLI, by tests/integration/ingest.sh:
//   node ingest_sign.mjs SCHEME SECRET BODY_FILE [ID] [UNIX_TS]  → JSON {header: value, …}
import { readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { sign as githubSign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';

const stripe = new Stripe('sk_test_not_used_offline');

// The headers a sender of `scheme` sends with `body` (a string), signed with `secret`.
export async function signHeaders(scheme, secret, body, { id, ts } = {}) {
  const now = ts ?? Math.floor(Date.now() / 1000);
  const deliveryId = id ?? `msg_${Math.random().toString(36).slice(2)}`;
  switch (scheme) {
    case 'standard-webhooks': {
      const wh = new Webhook(secret);
      return {
        'webhook-id': deliveryId,
        'webhook-timestamp': String(now),
        'webhook-signature': wh.sign(deliveryId, new Date(now * 1000), body),
      };
    }
    case 'github':
      return {
        'X-GitHub-Delivery': deliveryId,
        'X-GitHub-Event': 'push',
        'X-Hub-Signature-256': await githubSign(secret, body),
      };
    case 'stripe':
      return {
        'Stripe-Signature': stripe.webhooks.generateTestHeaderString({
          payload: body,
          secret,
          timestamp: now,
        }),
      };
    default:
      throw new Error(`no signer for ${scheme}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [scheme, secret, file, id, ts] = process.argv.slice(2);
  const body = readFileSync(file, 'utf8');
  const h = await signHeaders(scheme, secret, body, { id, ts: ts ? Number(ts) : undefined });
  process.stdout.write(JSON.stringify(h) + '\n');
}
