// A minimal PNG decoder for the e2e pixel checks (8-bit RGB or RGBA, not interlaced: what
// Chromium's screenshots are), so the checks read the screenshot itself, not the canvas.
import zlib from 'node:zlib';

/** Decodes a PNG into { width, height, pixel(x, y) -> [r, g, b] }. */
export function decodePng(buf) {
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let pos = 8, width = 0, height = 0, channels = 0;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos);
    const type = buf.toString('ascii', pos + 4, pos + 8);
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const [depth, colour, , , interlace] = [data[8], data[9], data[10], data[11], data[12]];
      if (depth !== 8 || interlace !== 0 || (colour !== 2 && colour !== 6)) throw new Error(`unsupported PNG (depth ${depth}, colour ${colour}, interlace ${interlace})`);
      channels = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') idat.push(data);
    pos += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y += 1) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i += 1) {
      const a = i >= channels ? out[y * stride + i - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + i] : 0;
      const c = i >= channels && y > 0 ? out[(y - 1) * stride + i - channels] : 0;
      let v = line[i];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[y * stride + i] = v & 0xff;
    }
  }
  const pixel = (x, y) => { const o = y * stride + x * channels; return [out[o], out[o + 1], out[o + 2]]; };
  return { width, height, pixel };
}

/** Whether two [r, g, b] colours are within `tol` on every channel. */
export const near = (a, b, tol = 2) => a.every((v, i) => Math.abs(v - b[i]) <= tol);

/** How many pixels of row `y`, x in [from, to), satisfy `pred([r, g, b])`. */
export function countRow(img, y, from, to, pred) {
  let n = 0;
  for (let x = from; x < to; x += 1) if (pred(img.pixel(x, y))) n += 1;
  return n;
}
