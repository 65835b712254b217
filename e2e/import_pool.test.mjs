// The import workers (crates/worker/src/pool.rs): the main worker cuts a large trace into ranges
// that a pool of workers reads, and merges what they send back. The page must show exactly what
// the worker alone shows (?threads=1) and what the CLI computes, for a target (a plain file whose
// planned ranges the main worker reads from the file's stream and transfers: range_reader.rs)
// and a reference (gzip, inflated and cut by the main worker).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import zlib from 'node:zlib';
import { OUT, DIST, SHARED, JARVIS, startApp, stopApp, openApp, openAt, serveDir, assertLocalOnly, cliTimeline } from './harness.mjs';

const OWL = path.join(SHARED, 'traces', 'tracelens', 'h100_google_owlv2-large-patch14-ensemble__1016001.json.gz');
const OWL_MI = path.join(SHARED, 'traces', 'tracelens', 'mi300xvf_google_owlv2-large-patch14-ensemble__1016001.json.gz');
const present = fs.existsSync(OWL) && fs.existsSync(OWL_MI);

await startApp();
after(stopApp);

// The H100 trace as plain JSON (60 MB: its ranges are planned from windows of the file),
// decompressed and written once for the tests that read it.
const PLAIN = path.join(OUT, 'owlv2_h100.json');
let owlText;
function plainOwl() {
  if (!owlText) {
    owlText = zlib.gunzipSync(fs.readFileSync(OWL));
    fs.writeFileSync(PLAIN, owlText);
  }
  return owlText;
}
after(() => fs.rmSync(PLAIN, { force: true }));
// Its GPU timeline as the CLI computes it, once.
let owlTimeline;
function cliOwlTimeline() {
  plainOwl();
  owlTimeline ??= cliTimeline(PLAIN);
  return owlTimeline;
}

// What the overview shows: the GPU timeline, the headline and the top ops, as text.
async function overview(page) {
  const shown = {};
  for (const type of Object.keys(cliOwlTimeline())) {
    shown[type] = Number(await page.getByTestId(`gpu-timeline-${type}`).getAttribute('data-value'));
  }
  return {
    timeline: shown,
    headline: await page.getByTestId('headline').textContent(),
    top: await page.getByTestId('top-ops').textContent(),
  };
}

test('import workers read a large trace and its reference to the CLI\'s numbers, as the worker alone does', { skip: !present && !process.env.CI }, async () => {
  const expected = cliOwlTimeline();
  const seen = [];
  for (const threads of [3, 1]) {
    const { page, errors, requests } = await openApp(undefined, {}, `?threads=${threads}`);
    await page.getByTestId('trace-input').setInputFiles(PLAIN);
    // The reference at once: with the pool, its request waits in the worker until the target is
    // read, then goes through the pool too.
    await page.getByTestId('reference-input').setInputFiles(OWL_MI);
    await page.locator('body[data-complete-ms]').waitFor({ timeout: 120000 });
    const workers = Number(await page.getByTestId('analysis-cost').getAttribute('data-import-workers'));
    // ?threads=N: the worker and N - 1 import workers (none for 1).
    assert.equal(workers, threads - 1, `import workers with ?threads=${threads}`);
    const cost = await page.getByTestId('analysis-cost').textContent();
    assert.match(cost, threads > 1 ? new RegExp(`read by ${threads - 1} import workers and the main worker`) : /^worker memory/);
    if (threads > 1) {
      // Once both import workers hold their two ranges, the main worker reads the next one itself
      // (crates/worker/src/pool.rs, OWN): with ~24 ranges that happens before any reply.
      const own = Number(await page.getByTestId('analysis-cost').getAttribute('data-import-own-ranges'));
      assert.ok(own >= 1, `ranges read by the main worker: ${own}`);
      // The target's ranges came from the file's stream, through the main worker.
      const streamed = Number(await page.getByTestId('analysis-cost').getAttribute('data-import-streamed-ranges'));
      assert.ok(streamed >= 2, `ranges read from the file's stream: ${streamed}`);
    }
    await page.screenshot({ path: path.join(OUT, `import-pool-threads${threads}.png`) });
    const o = await overview(page);
    assert.deepEqual(o.timeline, expected, `?threads=${threads}`);
    await page.getByTestId('tab-compare').waitFor({ state: 'visible', timeout: 120000 });
    await page.getByTestId('tab-compare').click();
    const comparison = page.getByTestId('comparison');
    await comparison.waitFor({ timeout: 60000 });
    o.comparison = await comparison.textContent();
    assert.match(o.comparison, /Performance Comparison: mi300x vs h100_sxm/);
    seen.push(o);
    assert.deepEqual(errors, []);
    assertLocalOnly(requests);
    await page.close();
  }
  assert.deepEqual(seen[0], seen[1]);
});

// A browser whose `Blob.stream()` is not a byte stream (no BYOB reader; Chromium's is one, so a
// shim in the worker's loader stands in for such a browser, in the main worker and in the import
// workers alike, which run the same loader). The worker alone then reads with the stream's
// default reader (stream.rs), and the pool's import workers each read their own slice of the file
// with FileReaderSync (range_reader.rs is not used): both must still give the CLI's numbers.
const NO_BYTE_STREAMS = `{
  const stream = Blob.prototype.stream;
  Blob.prototype.stream = function () {
    const r = stream.call(this).getReader();
    return new ReadableStream({
      async pull(c) { const { done, value } = await r.read(); if (done) c.close(); else c.enqueue(value); },
      cancel(why) { return r.cancel(why); },
    });
  };
}
`;

test('without byte streams the worker and the import workers read the file their other way, to the same numbers', { skip: !present && !process.env.CI }, async () => {
  const loader = fs.readFileSync(path.join(DIST, 'worker_loader.js'), 'utf8');
  const served = await serveDir(DIST, { '/worker_loader.js': NO_BYTE_STREAMS + loader });
  const expected = cliOwlTimeline();
  const seen = [];
  try {
    for (const threads of [3, 1]) {
      const { page, errors, requests } = await openAt(`${served.base}/?threads=${threads}`);
      await page.getByTestId('trace-input').setInputFiles(PLAIN);
      await page.locator('body[data-complete-ms]').waitFor({ timeout: 120000 });
      const cost = page.getByTestId('analysis-cost');
      assert.equal(Number(await cost.getAttribute('data-import-workers')), threads - 1);
      if (threads > 1) {
        assert.match(await cost.textContent(), /read by 2 import workers and the main worker/);
        // Every range was read by its worker from a slice, none from the main worker's stream.
        assert.equal(Number(await cost.getAttribute('data-import-streamed-ranges')), 0);
      }
      const o = await overview(page);
      assert.deepEqual(o.timeline, expected, `?threads=${threads} without byte streams`);
      seen.push(o);
      assert.deepEqual(errors, []);
      assertLocalOnly(requests, served.base);
      await page.close();
    }
    assert.deepEqual(seen[0], seen[1]);
  } finally {
    served.server.close();
  }
});

// The CLI's example line of diagnostic `code` (`e.g. event N at byte B: …`), where it locates it.
function cliExample(trace, code) {
  const text = execFileSync(JARVIS, ['report', trace, '--no-files']).toString();
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.includes(`] ${code} `));
  assert.ok(at >= 0, `the CLI reports ${code}: ${text.slice(-600)}`);
  return lines[at + 1].trim().replace(/^e\.g\. /, '');
}

test('a damaged large trace read by import workers is located as the worker alone and the CLI locate it', { skip: !present && !process.env.CI }, async () => {
  const whole = plainOwl();
  // An event broken in the middle of the file (in some import worker's range, not the first),
  // the file cut short inside its events, and the gzip stream cut short (inflated and cut into
  // ranges by the main worker, a path of its own).
  const at = whole.indexOf('"name"', 30_000_000);
  const gz = fs.readFileSync(OWL);
  const damaged = [
    ['malformed_event', 'owlv2_broken.json', Buffer.concat([whole.subarray(0, at), Buffer.from('"name": @@@'), whole.subarray(at + 6)])],
    ['truncated_trace', 'owlv2_cut.json', whole.subarray(0, 45_000_000)],
    ['truncated_trace', 'owlv2_cut.json.gz', gz.subarray(0, Math.floor(gz.length * 0.6))],
  ];
  for (const [code, name, bytes] of damaged) {
    const file = path.join(OUT, name);
    fs.writeFileSync(file, bytes);
    const expected = cliExample(file, code);
    assert.match(expected, /byte \d+/, `the CLI locates ${code}`);
    for (const threads of [3, 1]) {
      const { page, errors } = await openApp(undefined, {}, `?threads=${threads}`);
      await page.getByTestId('trace-input').setInputFiles(file);
      await page.locator('body[data-complete-ms]').waitFor({ timeout: 120000 });
      assert.equal(Number(await page.getByTestId('analysis-cost').getAttribute('data-import-workers')), threads - 1);
      await page.getByTestId('tab-diagnostics').click();
      const shown = await page.getByTestId('diagnostics').textContent();
      assert.ok(shown.includes(code) && shown.includes(expected),
        `?threads=${threads}, ${name}: the page shows ${code} as "${expected}": ${shown.slice(0, 400)}`);
      assert.deepEqual(errors, []);
      await page.close();
    }
    fs.rmSync(file, { force: true });
  }
});
