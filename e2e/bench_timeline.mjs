// Benchmark (not a test) of the timeline view with a million kernels, in Debian's headless
// Chromium. A synthetic trace of 6,330 training steps (1,000,140 kernels, `jarvis synth`) is
// loaded; then, one input per animation frame, the view is zoomed in and out over the whole
// trace and dragged at three zoom levels (with and without the host lanes). Reported per
// scenario: complete frames per second while interacting, the latency from an input to the
// exact frame showing it (median / 95th percentile), the worker's round trip and the paint.
// Usage (after `trunk build --release` and `cargo build --release -p jarvis-cli`):
//   node e2e/bench_timeline.mjs [TRACE]
import path from 'node:path';
import { startApp, stopApp, openApp, millionKernelTrace } from './harness.mjs';

const FRAMES = 180;

const trace = process.argv[2] || millionKernelTrace('json');

await startApp();
const { page } = await openApp({ width: 1600, height: 1000 });
await page.getByTestId('app-status').getByText('Ready').waitFor({ timeout: 30000 });
const loadStart = Date.now();
await page.getByTestId('trace-input').setInputFiles(trace);
await page.locator('body[data-complete-ms]').waitFor({ timeout: 600000 });
console.log(`${path.basename(trace)}: analyzed in ${((Date.now() - loadStart) / 1000).toFixed(1)} s`);
await page.getByTestId('tab-timeline').click();
await page.waitForFunction(() => Number(document.querySelector('[data-testid=timeline]')?.dataset.frames) >= 1,
  null, { timeout: 60000 });

// Runs one scenario in the page: `kind` is 'zoom' (wheel in and out at the centre) or 'drag'.
async function scenario(name, kind, presses) {
  const r = await page.evaluate(async ({ kind, presses, frames }) => {
    const c = document.querySelector('[data-testid=timeline]');
    const raf = () => new Promise((res) => requestAnimationFrame(res));
    const key = (k) => c.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true }));
    key('0');
    for (let i = 0; i < presses; i++) key('w');
    const settle = async () => { for (let i = 0; i < 30; i++) await raf(); };
    await settle();
    const rec = [];
    const obs = new MutationObserver(() => rec.push({
      ms: Number(c.dataset.frameMs), rt: Number(c.dataset.lastRoundtripMs), paint: Number(c.dataset.lastPaintMs),
      items: Number(c.dataset.items),
    }));
    obs.observe(c, { attributes: true, attributeFilter: ['data-frames'] });
    const rect = c.getBoundingClientRect();
    const y = rect.top + 40;
    let x = rect.left + rect.width * 0.7;
    const opts = (cx) => ({ clientX: cx, clientY: y, button: 0, bubbles: true });
    if (kind === 'drag') c.dispatchEvent(new MouseEvent('mousedown', opts(x)));
    const gaps = [];
    let last = performance.now();
    const t0 = last;
    for (let i = 0; i < frames; i++) {
      if (kind === 'drag') {
        x += (Math.floor(i / 45) % 2 ? 6 : -6);
        c.dispatchEvent(new MouseEvent('mousemove', opts(x)));
      } else {
        c.dispatchEvent(new WheelEvent('wheel', { ...opts(rect.left + rect.width * 0.6), deltaY: i % 20 < 10 ? -60 : 60, cancelable: true }));
      }
      const now = await raf();
      gaps.push(now - last);
      last = now;
    }
    const t1 = performance.now();
    if (kind === 'drag') c.dispatchEvent(new MouseEvent('mouseup', opts(x)));
    await settle();
    obs.disconnect();
    return { rec, gaps, seconds: (t1 - t0) / 1000, span: Number(c.dataset.endNs) - Number(c.dataset.startNs) };
  }, { kind, presses, frames: FRAMES });
  const q = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
  const col = (k) => r.rec.map((x) => x[k]).filter((v) => Number.isFinite(v));
  const row = {
    scenario: name,
    'view ms': (r.span / 1e6).toFixed(1),
    'frames/s': (r.rec.length / r.seconds).toFixed(1),
    'rAF gap ms (median/max)': `${q(r.gaps, 0.5).toFixed(1)} / ${Math.max(...r.gaps).toFixed(1)}`,
    'latency ms (median/p95)': `${q(col('ms'), 0.5).toFixed(1)} / ${q(col('ms'), 0.95).toFixed(1)}`,
    'round trip ms': q(col('rt'), 0.5).toFixed(2),
    'paint ms': q(col('paint'), 0.5).toFixed(2),
    items: q(col('items'), 0.5),
  };
  console.log(JSON.stringify(row));
  return row;
}

const rows = [];
rows.push(await scenario('zoom, whole trace', 'zoom', 0));
rows.push(await scenario('drag, 1/10 of the trace', 'drag', 10));
rows.push(await scenario('drag, 1/1000 of the trace', 'drag', 31));
if (await page.getByTestId('timeline-host').count()) {
  await page.getByTestId('timeline-host').check();
  await page.waitForTimeout(500);
  rows.push(await scenario('drag, 1/10, host lanes on', 'drag', 10));
}
console.table(rows);
await stopApp();
