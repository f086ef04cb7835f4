// SPDX-License-Identifier: MIT
// The check kit of the JS tests, as tests/harness/check.h is the C tests': check() counts a pass
// or prints the failure, finish() prints the final "N passed, N failed" line and exits (1 when a
// check failed or none ran), run() runs a test's async main so. Also the polling wait they share.
import { writeFileSync } from 'node:fs';

export const counts = { passed: 0, failed: 0 };

export function check(cond, what) {
  if (cond) {
    counts.passed++;
  } else {
    counts.failed++;
    console.error(`CHECK failed: ${what}`);
  }
}

/** Counts a check that held by being reached (after a wait that throws on timeout, say). */
export function pass() {
  counts.passed++;
}

/** Prints an error that ended a test early and counts it as a failed check. */
export function fail(err) {
  console.error(err);
  counts.failed++;
}

/** The final line (written synchronously, so process.exit cannot cut it) and the exit status. */
export function finish() {
  writeFileSync(1, `${counts.passed} passed, ${counts.failed} failed\n`);
  process.exit(counts.failed === 0 && counts.passed > 0 ? 0 : 1);
}

/** Runs the async main; what it throws counts as one failure; then finish(). */
export function run(main) {
  main().then(finish, (err) => {
    fail(err);
    finish();
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const patienceFactor = (() => {
  const f = Number(process.env.ROOST_TEST_PATIENCE ?? 6);
  return Number.isInteger(f) && f >= 1 && f <= 100 ? f : 6;
})();

/** A deadline of ms, as an idle machine needs it, stretched for a loaded one (ROOST_TEST_PATIENCE,
 * default 6, as the C harness's h_patience): a slow machine may make a run slower, never fail it. */
export function patience(ms) {
  return ms * patienceFactor;
}

/** Polls cond (may be async) every 25 ms until it holds (true) or patience(timeoutMs) passed
 * (false, and "timed out: what" printed when what is given). */
export async function waitUntil(cond, timeoutMs, what) {
  const deadline = Date.now() + patience(timeoutMs);
  for (;;) {
    if (await cond()) {
      return true;
    }
    if (Date.now() > deadline) {
      if (what) {
        console.error(`timed out: ${what}`);
      }
      return false;
    }
    await sleep(25);
  }
}

/** waitUntil for node:test scenarios: throws "timed out: what" instead of returning false. */
export async function until(cond, timeoutMs, what) {
  if (!(await waitUntil(cond, timeoutMs))) {
    throw new Error(`timed out: ${what}`);
  }
}
