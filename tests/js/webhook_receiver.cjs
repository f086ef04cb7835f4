#!/usr/bin/env node
// A webhook receiver for tests/integration/webhooks.sh: HTTPS on 127.0.0.1 (the test's own CA),
// verifying every request it gets with two independent libraries: the npm `standardwebhooks`
// package (webhook-id/-timestamp/-signature with the endpoint secret) and the npm
// `http-message-signatures` package (roostd's RFC 9421 Signature with the key served at
// /api/v1/keys/server). Usage:
//   webhook_receiver.cjs CERT KEY SECRET JWKS_URL STATE_DIR [LISTEN_HOST (default 127.0.0.1)]
// It writes its port to STATE_DIR/port and one JSON line per request to STATE_DIR/log:
//   {"path","id","sw":true|false,"sig":true|false,"kid","type","event_id","status","at","lease","payload"}
// (kid: the keyid of the RFC 9421 signature, the key the sending node signed with)
// What a path answers: its first segment names the behaviour: /ok → 200, /s500 → 500,
// /redirect → 302 to /ok, /gone → 410, /hang → never answers (but the verification challenge),
// /hangverify → never answers anything, not even the challenge,
// /flip → 500 until the file STATE_DIR/flip exists, then 200, /stall/N → 500 to an event's first
// N - 1 deliveries, never answers its Nth, 200 from then on (counted per webhook-id for the life
// of the receiver, so across roostd restarts). The verification challenge is answered correctly
// on every path but /badverify.
'use strict';
const fs = require('fs');
const https = require('https');
const http = require('http');
const crypto = require('crypto');
const { Webhook } = require('standardwebhooks');
const { httpbis, createVerifier } = require('http-message-signatures');

const [cert, key, secret, jwksUrl, stateDir, listenHost = '127.0.0.1'] = process.argv.slice(2);
const hook = new Webhook(secret);
const hmacKey = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
let serverKeys = null;

function fetchJwks() {
  return new Promise((resolve, reject) => {
    http.get(jwksUrl, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => { try { resolve(JSON.parse(data)); } catch (e) { reject(e); } });
    }).on('error', reject);
  });
}

const deliveries = new Map(); // webhook-id → deliveries seen (for /stall/N)

let sigError = null;
async function verifySig(req, body) {
  sigError = null;
  if (!serverKeys) serverKeys = await fetchJwks();
  const headers = {};
  for (const [k, v] of Object.entries(req.headers)) headers[k] = v;
  try {
    return await httpbis.verifyMessage({
      keyLookup: async (p) => {
        const jwk = serverKeys.keys.find((k) => k.kid === p.keyid);
        if (!jwk) return null;
        const pub = crypto.createPublicKey({ key: jwk, format: 'jwk' });
        return { id: jwk.kid, algs: ['ed25519'], verify: createVerifier(pub, 'ed25519') };
      },
      requiredFields: ['@method', '@authority', '@path', 'content-digest', 'webhook-id'],
      requiredParams: ['created', 'expires', 'keyid'],
    }, { method: req.method, url: `https://${req.headers.host}${req.url}`, headers });
  } catch (e) {
    sigError = e.message;
    process.stderr.write(`signature: ${e.message}\n`);
    return false;
  }
}

function digestOk(req, body) {
  const want = `sha-256=:${crypto.createHash('sha256').update(body).digest('base64')}:`;
  return req.headers['content-digest'] === want;
}

const server = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) },
  (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      let sw = false;
      let swError = null;
      let doc = null;
      try { doc = hook.verify(body.toString(), req.headers); sw = true; } catch (e) {
        swError = e.message;
        process.stderr.write(`standardwebhooks: ${e.message}\n`);
      }
      const verified = await verifySig(req, body);
      const sig = verified === true && digestOk(req, body);
      const why = sig ? null : (sigError || `verifyMessage=${verified} digest=${digestOk(req, body)}`);
      const behaviour = req.url.split('/')[1].split('?')[0];
      let status = 200;
      let answer = '{}';
      if (doc && doc.type === 'endpoint.verification') {
        if (behaviour === 'badverify') {
          answer = JSON.stringify({ challenge_response: '00'.repeat(32) });
        } else {
          answer = JSON.stringify({ challenge_response:
            crypto.createHmac('sha256', hmacKey).update(doc.challenge).digest('hex') });
        }
      } else if (behaviour === 's500') {
        status = 500; answer = 'boom';
      } else if (behaviour === 'redirect') {
        status = 302;
      } else if (behaviour === 'gone') {
        status = 410;
      } else if (behaviour === 'flip') {
        status = fs.existsSync(`${stateDir}/flip`) ? 200 : 500;
        answer = status === 500 ? 'boom' : answer;
      }
      let stall = false;
      if (behaviour === 'stall' && !(doc && doc.type === 'endpoint.verification')) {
        const n = Number(req.url.split('/')[2]);
        const id = req.headers['webhook-id'] || '';
        const k = (deliveries.get(id) || 0) + 1;
        deliveries.set(id, k);
        if (k < n) {
          status = 500; answer = 'boom';
        }
        stall = k === n;
      }
      const kid = /keyid="([^"]*)"/.exec(req.headers['signature-input'] || '');
      const line = { path: req.url, id: req.headers['webhook-id'] || null, sw, sig,
        kid: kid ? kid[1] : null,
        type: doc && doc.type ? doc.type : null, event_id: doc && doc.event_id ? doc.event_id : null,
        status, at: Date.now(), sw_error: swError, sig_error: why,
        lease: !!(doc && ('lease_token' in doc)), payload: doc && doc.payload ? doc.payload : null };
      if (stall || behaviour === 'hangverify' ||
          (behaviour === 'hang' && !(doc && doc.type === 'endpoint.verification'))) {
        fs.appendFileSync(`${stateDir}/log`, JSON.stringify({ ...line, status: 0 }) + '\n');
        // When roostd gives up on it, a line in a file of its own (the log's readers count
        // deliveries): a test can order other deliveries against the end of a hanging one.
        res.on('close', () => fs.appendFileSync(`${stateDir}/closed`,
          JSON.stringify({ path: req.url, id: line.id, at: Date.now() }) + '\n'));
        return; // never answers: roostd's timeout ends it
      }
      fs.appendFileSync(`${stateDir}/log`, JSON.stringify(line) + '\n');
      const h = { 'Content-Type': 'application/json' };
      if (status === 302) h.Location = `https://${req.headers.host}/ok`;
      res.writeHead(status, h);
      res.end(answer);
    });
  });
server.listen(0, listenHost, () => {
  fs.writeFileSync(`${stateDir}/port.tmp`, String(server.address().port));
  fs.renameSync(`${stateDir}/port.tmp`, `${stateDir}/port`);
});
