// Probe (not a test): what a pool of two Web Workers gains over one reading a picked File, on
// this machine, with a busy loop standing in for the parse (2.2 ms per MB, the engine's
// WebAssembly import of OWLv2). One worker alone reads the file's stream (BYOB) and parses it
// all (the page's `?threads=1`); a pool of it and one helper splits the file into 4 MiB ranges,
// the helper parsing up to two at a time and the first worker the rest, with the ranges either
// read by whichever parses them (`FileReaderSync` on a slice, as `crates/worker/src/pool.rs`
// does) or read by the first worker through one stream into a buffer per range, transferred to
// the helper. docs/performance.md, "Two threads on two cores".
// Usage: node e2e/pool_probe.mjs FILE [ROUNDS]
import { launchChromium, filePage } from './harness.mjs';

const [file, rounds = '3'] = process.argv.slice(2);
if (!file) {
  console.error('usage: node e2e/pool_probe.mjs FILE [ROUNDS]');
  process.exit(2);
}
// One run of `mode` in a browser of its own: {ms, own, ranges, mb}, or null if the page closed.
async function once(mode) {
  const browser = await launchChromium();
  const page = await filePage(browser, file);
  const result = await page.evaluate(async ({ mode }) => {
    const common = `
      const spin = (ms) => { const t = performance.now(); while (performance.now() - t < ms) {} };
      // The parse's stand-in, after copying the bytes once into a buffer kept for it (as the
      // workers copy into their WebAssembly memory).
      const scratch = new Uint8Array(4 << 20);
      const parse = (bytes) => { scratch.set(bytes); spin(bytes.length / 1e6 * 2.2); };
      const sync = (blob) => new Uint8Array(new FileReaderSync().readAsArrayBuffer(blob));`;
    const helper = `${common}
      onmessage = (e) => { parse(e.data.buf ? new Uint8Array(e.data.buf) : sync(e.data.slice)); postMessage(0); };`;
    const first = `${common}
      const RANGE = 4 << 20;
      const turn = () => new Promise((r) => setTimeout(r, 0));
      onmessage = async (e) => {
        const { f, helperUrl, mode } = e.data;
        const w = mode === 'alone' ? null : new Worker(helperUrl);
        await new Promise((r) => setTimeout(r, 300));
        const t = performance.now();
        let inFlight = 0; let own = 0; let ranges = 0;
        if (w) w.onmessage = () => { inFlight -= 1; };
        // A range goes to the helper if it has room, else is parsed here.
        const hand = (job) => {
          ranges += 1;
          if (inFlight < 2) {
            inFlight += 1;
            if (job.buf) w.postMessage({ buf: job.buf }, [job.buf]); else w.postMessage({ slice: job.slice });
          } else {
            own += 1;
            parse(job.buf ? new Uint8Array(job.buf) : sync(job.slice));
          }
        };
        if (mode === 'alone') {
          // As the page's worker reads (crates/worker/src/stream.rs): each read's bytes, as many
          // as are ready, parsed before the next read is asked for.
          const rd = f.stream().getReader({ mode: 'byob' });
          let buf = new ArrayBuffer(4 << 20);
          for (;;) {
            const { done, value } = await rd.read(new Uint8Array(buf));
            if (done) break;
            parse(value);
            buf = value.buffer;
          }
        } else if (mode === 'slices') {
          for (let a = 0; a < f.size; a += RANGE) {
            hand({ slice: f.slice(a, Math.min(f.size, a + RANGE)) });
            await turn();
          }
        } else {
          const rd = f.stream().getReader({ mode: 'byob' });
          for (let a = 0; a < f.size; a += RANGE) {
            const len = Math.min(RANGE, f.size - a);
            let buf = new ArrayBuffer(len); let at = 0;
            while (at < len) {
              const { done, value } = await rd.read(new Uint8Array(buf, at, len - at));
              if (done) break;
              buf = value.buffer; at += value.length;
            }
            hand({ buf });
          }
        }
        while (inFlight > 0) await turn();
        if (w) w.terminate();
        postMessage({ ms: performance.now() - t, own, ranges });
      };`;
    const helperUrl = URL.createObjectURL(new Blob([helper]));
    const firstUrl = URL.createObjectURL(new Blob([first]));
    const f = document.getElementById('f').files[0];
    const m = new Worker(firstUrl);
    const r = await new Promise((res) => {
      m.onmessage = (e) => res(e.data);
      m.onerror = () => res(null);
      setTimeout(() => res(null), 20000);
      m.postMessage({ f, helperUrl, mode });
    });
    m.terminate();
    return r && { ...r, mb: f.size / 1e6 };
  }, { mode }).catch(() => null);
  await browser.close();
  return result;
}

const label = {
  alone: 'one worker, the stream (BYOB)',
  slices: 'two workers, each reading its ranges (FileReaderSync)',
  stream: 'two workers, ranges from one stream, transferred',
};
// Each run in a browser of its own, the modes interleaved.
const out = {};
let mb = 0;
for (let i = 0; i < Number(rounds); i += 1) {
  for (const mode of Object.keys(label)) {
    // Headless Chromium now and then closes the page during a run (seen with the lone
    // worker's stream); such a run is tried again.
    let r = null;
    for (let tries = 0; !r && tries < 4; tries += 1) r = await once(mode);
    if (!r) throw new Error(`${mode}: the page closed in four tries`);
    mb = r.mb;
    (out[mode] ||= []).push(r);
  }
}
console.log(`${file}: ${mb.toFixed(1)} MB, parse stand-in ${(mb * 2.2).toFixed(0)} ms, ${rounds} rounds`);
for (const [mode, runs] of Object.entries(out)) {
  const ms = runs.map((r) => r.ms).sort((a, b) => a - b);
  const here = runs.filter((r) => r.ranges).map((r) => r.own);
  console.log(`${label[mode]}: median ${ms[Math.floor(ms.length / 2)].toFixed(0)} ms (${ms.map((x) => x.toFixed(0)).join(' ')})`
    + (here.length ? `; ranges parsed by the first worker: ${here.join(' ')} of ${runs[0].ranges}` : ''));
}
