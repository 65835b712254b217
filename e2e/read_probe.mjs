// Probe (not a test): what reading a picked File costs a Web Worker in Debian's headless
// Chromium, by method, with a busy loop standing in for the parse (2.2 ms per MB, the engine's
// WebAssembly import of OWLv2). Why the worker reads a trace through `Blob.stream()`
// (crates/worker/src/stream.rs; docs/performance.md, "The page closer to native").
// Usage: node e2e/read_probe.mjs FILE
import { launchChromium, filePage } from './harness.mjs';

const file = process.argv[2];
const browser = await launchChromium();
const page = await filePage(browser, file);
const r = await page.evaluate(async () => {
  const src = `
  const spin = (ms) => { const t = performance.now(); while (performance.now() - t < ms) {} };
  const PER_MB = 2.2;
  const parse = (bytes) => spin(bytes / 1e6 * PER_MB);
  onmessage = async (e) => {
    const f = e.data.f; const out = {};
    for (const S of [16, 64]) {
      const B = S * 1024 * 1024;
      let t = performance.now(); const r = new FileReaderSync();
      for (let a = 0; a < f.size; a += B) {
        const b = r.readAsArrayBuffer(f.slice(a, Math.min(f.size, a + B)));
        const c = new Uint8Array(b.byteLength); c.set(new Uint8Array(b)); parse(c.length);
      }
      out['FileReaderSync ' + S + ' MiB slices'] = performance.now() - t;
      t = performance.now(); let next = f.slice(0, Math.min(f.size, B)).arrayBuffer();
      for (let a = 0; a < f.size; a += B) {
        const b = await next; const n = a + B;
        if (n < f.size) next = f.slice(n, Math.min(f.size, n + B)).arrayBuffer();
        const c = new Uint8Array(b.byteLength); c.set(new Uint8Array(b)); parse(c.length);
      }
      out['arrayBuffer() ' + S + ' MiB, next prefetched'] = performance.now() - t;
    }
    // The import workers' ranges (4 MiB slices of the file): read synchronously, or each
    // through its own stream (BYOB, into a buffer the range's size), read one after another
    // or with the next range's reads already asked for (two in flight, as the pool hands out).
    {
      const B = 4 << 20;
      let t = performance.now(); const r = new FileReaderSync(); let own = 0;
      for (let a = 0; a < f.size; a += B) {
        const r0 = performance.now();
        const b = r.readAsArrayBuffer(f.slice(a, Math.min(f.size, a + B)));
        const c = new Uint8Array(b.byteLength); c.set(new Uint8Array(b)); own += performance.now() - r0;
        parse(c.length);
      }
      out['FileReaderSync 4 MiB ranges'] = performance.now() - t;
      out['  of it in reads  '] = own;
      const whole = async (blob) => {
        const rd = blob.stream().getReader({ mode: 'byob' });
        let buf = new ArrayBuffer(blob.size); let at = 0;
        for (;;) {
          const { done, value } = await rd.read(new Uint8Array(buf, at, buf.byteLength - at));
          if (done) break;
          buf = value.buffer; at += value.length; if (at >= buf.byteLength) break;
        }
        return new Uint8Array(buf, 0, at);
      };
      t = performance.now(); own = 0;
      for (let a = 0; a < f.size; a += B) {
        const r0 = performance.now();
        const v = await whole(f.slice(a, Math.min(f.size, a + B)));
        const c = new Uint8Array(v.length); c.set(v); own += performance.now() - r0;
        parse(c.length);
      }
      out['stream() per 4 MiB range'] = performance.now() - t;
      out['  of it waiting and copying'] = own;
      t = performance.now(); own = 0;
      let next = whole(f.slice(0, Math.min(f.size, B)));
      for (let a = 0; a < f.size; a += B) {
        const r0 = performance.now();
        const v = await next;
        if (a + B < f.size) next = whole(f.slice(a + B, Math.min(f.size, a + 2 * B)));
        const c = new Uint8Array(v.length); c.set(v); own += performance.now() - r0;
        parse(c.length);
      }
      out['stream() per 4 MiB range, next asked for'] = performance.now() - t;
      out['  of it waiting and copying '] = own;
    }
    // Each chunk is copied once, as the worker copies it into its WebAssembly memory; "in
    // reads" is the reading thread's own time in read() and the copy.
    const into = new Uint8Array(64 << 20);
    let t = performance.now(); const rd = f.stream().getReader(); let chunks = 0; let own = 0;
    for (;;) {
      const r0 = performance.now(); const { done, value } = await rd.read(); if (done) break;
      into.set(value.subarray(0, Math.min(value.length, into.length))); own += performance.now() - r0;
      chunks++; parse(value.length);
    }
    out['stream() (' + chunks + ' chunks)'] = performance.now() - t;
    out['  of it in reads'] = own;
    // The worker's way (crates/worker/src/stream.rs): a BYOB reader into one 4 MiB buffer.
    t = performance.now(); const by = f.stream().getReader({ mode: 'byob' }); chunks = 0; own = 0;
    let buf = new ArrayBuffer(4 << 20);
    for (;;) {
      const r0 = performance.now(); const { done, value } = await by.read(new Uint8Array(buf)); if (done) break;
      into.set(value); buf = value.buffer; own += performance.now() - r0;
      chunks++; parse(value.length);
    }
    out['stream() BYOB 4 MiB (' + chunks + ' reads)'] = performance.now() - t;
    out['  of it in reads '] = own;
    t = performance.now(); const rd2 = f.stream().getReader();
    for (;;) { const { done } = await rd2.read(); if (done) break; }
    out['stream() read alone'] = performance.now() - t;
    t = performance.now(); parse(f.size); out['the parse alone'] = performance.now() - t;
    postMessage(out);
  };`;
  const w = new Worker(URL.createObjectURL(new Blob([src])));
  const f = document.getElementById('f').files[0];
  return await new Promise((res) => { w.onmessage = (e) => res(e.data); w.postMessage({ f }); });
});
for (const [k, v] of Object.entries(r)) console.log(`${k}: ${v.toFixed(0)} ms`);
await browser.close();
