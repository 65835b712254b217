// Benchmark (not a test) of the ops view on 100k rows, in Debian's headless Chromium: a Jarvis
// bundle whose jarvis.json holds 100,000 synthetic explorer rows is dropped on the page, then
// the time from a sort click or a filter keystroke to the next painted frame is measured.
// Usage (after `trunk build --release`): node e2e/bench_views.mjs [ROWS]
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { startApp, stopApp, openApp } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROWS = Number(process.argv[2] || 100000);

// A zip of stored (uncompressed) entries: enough for the worker's reader.
function zip(entries) {
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const [name, data] of entries) {
    const n = Buffer.from(name);
    const crc = zlib.crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0); local.writeUInt16LE(20, 4); local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18); local.writeUInt32LE(data.length, 22); local.writeUInt16LE(n.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0); central.writeUInt16LE(20, 4); central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16); central.writeUInt32LE(data.length, 20); central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(n.length, 28); central.writeUInt32LE(offset, 42);
    locals.push(local, n, data);
    centrals.push(central, n);
    offset += 30 + n.length + data.length;
  }
  const dir = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0); end.writeUInt16LE(entries.length, 8); end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(dir.length, 12); end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, dir, end]);
}

// Deterministic pseudo-random rows (a linear congruential generator).
let seed = 42;
const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const cats = ['gemm', 'elementwise', 'reduce', 'sdpa_fwd', 'other'];
const ops = Array.from({ length: ROWS }, (_, row) => {
  const ms = rand() * 10;
  const count = 1 + Math.floor(rand() * 500);
  return {
    row, name: `aten::op_${Math.floor(rand() * 5000)}`, category: cats[row % cats.length], op_category: 'other', count,
    kernel_ms: ms, mean_us: (ms * 1e3) / count, pct_compute: ms / 100, flops_per_byte: rand() * 500, tflops_s: rand() * 900,
    tb_s: rand() * 3, efficiency_pct: rand() * 100, bound: rand() < 0.5 ? 'compute' : 'memory', compute_spec: 'matrix_bf16',
    input_dims: `((${row}, 1024), (1024, 4096))`, input_type: "('c10::BFloat16', 'c10::BFloat16')", kernels: '', module_path: '',
    parent_chain: [], subtree: [], recommendations: [],
  };
});
const analysis = {
  format: 'jarvis-analysis', version: 1, sheets: [],
  facts: { json_bytes: 0, total_events: 0, kernels: 0, device_names: ['synthetic'] },
  platform: null, timeline: { computation: 1, total: 1 }, headline: {}, top_ops: [], diagnostics: [], recommendations: [], ops,
};
const bundle = zip([['jarvis.json', Buffer.from(JSON.stringify(analysis))]]);
const bundlePath = path.resolve(here, '..', 'bench-out', 'bench_views_bundle.zip');
fs.mkdirSync(path.dirname(bundlePath), { recursive: true });
fs.writeFileSync(bundlePath, bundle);

await startApp();
const { page } = await openApp({ width: 1400, height: 1000 });
await page.getByTestId('app-status').getByText('Ready').waitFor({ timeout: 60000 });
await page.getByTestId('trace-input').setInputFiles(bundlePath);
await page.getByTestId('tab-ops').waitFor({ timeout: 120000 });
// Time from an action to the frame after the DOM settles.
const timed = async (action) => {
  await page.evaluate(() => { window.__t0 = performance.now(); });
  await action();
  return page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now() - window.__t0)))));
};
const open = await timed(() => page.getByTestId('tab-ops').click());
const sorts = [];
for (const key of ['count', 'count', 'name', 'tflops_s', 'efficiency_pct']) sorts.push(await timed(() => page.getByTestId(`ops-sort-${key}`).click()));
const filters = [];
for (const text of ['aten::op_1', 'aten::op_12', 'aten::op_123', '']) filters.push(await timed(() => page.getByTestId('ops-filter').fill(text)));
const scrolls = [];
for (let i = 1; i <= 5; i += 1) scrolls.push(await timed(() => page.locator('.ops-scroll').evaluate((el, f) => { el.scrollTop = el.scrollHeight * f; }, i / 6)));
const rendered = await page.getByTestId('ops-row').count();
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${ROWS} rows (bundle ${(bundle.length / 1e6).toFixed(1)} MB): open the ops view ${open.toFixed(0)} ms; sort median ${med(sorts).toFixed(0)} ms (max ${Math.max(...sorts).toFixed(0)}); filter keystroke median ${med(filters).toFixed(0)} ms (max ${Math.max(...filters).toFixed(0)}); scroll jump median ${med(scrolls).toFixed(0)} ms; ${rendered} rows in the DOM`);
await stopApp();
