//! `perf_improvement.png`: one horizontal bar of the trace's GPU time, the compute categories
//! stacked largest first in TraceLens's agent's colours, then grey for the non-computing rest.
//! The engine has no font, so the legend (names, ms, shares) is written next to the image in
//! `analysis.md`; the PNG is the bar alone. Encoded here (8-bit RGB, one zlib stream through
//! miniz_oxide) because one image does not justify an image crate.

/// The agent's category colours, in order, then the grey of non-computing time.
pub const COLOURS: [[u8; 3]; 8] = [
    [0xe7, 0x4c, 0x3c],
    [0xe6, 0x7e, 0x22],
    [0xf1, 0xc4, 0x0f],
    [0x2e, 0xcc, 0x71],
    [0x9b, 0x59, 0xb6],
    [0x1a, 0xbc, 0x9c],
    [0xe8, 0x43, 0x93],
    [0x34, 0x98, 0xdb],
];
pub const GREY: [u8; 3] = [0xaa, 0xb7, 0xc4];

/// The colour of segment `i` (cycling through [`COLOURS`]).
pub fn colour(i: usize) -> [u8; 3] {
    COLOURS[i % COLOURS.len()]
}

/// `#e74c3c`.
pub fn hex(c: [u8; 3]) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

const WIDTH: usize = 1800;
const HEIGHT: usize = 450;
const MARGIN: usize = 60;

/// The bar for `segments` (ms each, in order) out of `total_ms`, colour `i` for segment `i`
/// (cycling), grey for the rest.
pub fn stacked_bar(segments: &[f64], total_ms: f64) -> Vec<u8> {
    let mut px = vec![255u8; WIDTH * HEIGHT * 3];
    let (x0, x1) = (MARGIN, WIDTH - MARGIN);
    let (y0, y1) = (HEIGHT / 3, HEIGHT * 2 / 3);
    let span = (x1 - x0) as f64;
    let total = total_ms.max(segments.iter().sum::<f64>());
    let mut fill = |from: usize, to: usize, c: [u8; 3]| {
        for y in y0..y1 {
            for x in from..to.min(x1) {
                let i = (y * WIDTH + x) * 3;
                px[i..i + 3].copy_from_slice(&c);
            }
        }
    };
    let mut at = 0.0;
    let mut x = x0;
    if total > 0.0 {
        for (i, &ms) in segments.iter().enumerate() {
            at += ms.max(0.0);
            let end = x0 + (at / total * span).round() as usize;
            fill(x, end, colour(i));
            x = end;
        }
    }
    fill(x, x1, GREY);
    encode(WIDTH, HEIGHT, &px)
}

/// A PNG of 8-bit RGB pixels.
pub fn encode(width: usize, height: usize, rgb: &[u8]) -> Vec<u8> {
    let mut raw = Vec::with_capacity(height * (width * 3 + 1));
    for row in rgb.chunks(width * 3) {
        raw.push(0); // filter: none
        raw.extend_from_slice(row);
    }
    let mut out = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&(width as u32).to_be_bytes());
    ihdr.extend_from_slice(&(height as u32).to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]); // 8-bit, RGB, deflate, no filter set, no interlace
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(
        &mut out,
        b"IDAT",
        &miniz_oxide::deflate::compress_to_vec_zlib(&raw, 6),
    );
    chunk(&mut out, b"IEND", &[]);
    out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc = Crc::default();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(&crc.finish().to_be_bytes());
}

/// CRC-32 (ISO 3309, as PNG chunks use), bitwise: images here are a few KiB.
struct Crc(u32);

impl Default for Crc {
    fn default() -> Self {
        Crc(0xffff_ffff)
    }
}

impl Crc {
    fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u32::from(b);
            for _ in 0..8 {
                let mask = (self.0 & 1).wrapping_neg();
                self.0 = (self.0 >> 1) ^ (0xedb8_8320 & mask);
            }
        }
    }

    fn finish(self) -> u32 {
        !self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_of_iend_is_the_known_value() {
        let mut c = Crc::default();
        c.update(b"IEND");
        assert_eq!(c.finish(), 0xae42_6082);
    }

    #[test]
    fn the_bar_decodes_to_its_colours() {
        let png = stacked_bar(&[30.0, 10.0], 100.0);
        assert_eq!(&png[..8], &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a]);
        // Inflate the IDAT back and read the bar's middle row.
        let len = u32::from_be_bytes(png[33..37].try_into().unwrap()) as usize;
        assert_eq!(&png[37..41], b"IDAT");
        let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&png[41..41 + len]).unwrap();
        let row = HEIGHT / 2;
        let at = |x: usize| {
            let i = row * (WIDTH * 3 + 1) + 1 + x * 3;
            [raw[i], raw[i + 1], raw[i + 2]]
        };
        let span = (WIDTH - 2 * MARGIN) as f64;
        assert_eq!(at(MARGIN + (0.15 * span) as usize), COLOURS[0]);
        assert_eq!(at(MARGIN + (0.35 * span) as usize), COLOURS[1]);
        assert_eq!(at(MARGIN + (0.7 * span) as usize), GREY);
        assert_eq!(at(10), [255, 255, 255]);
        assert_eq!(hex(COLOURS[0]), "#e74c3c");
        assert_eq!(hex(GREY), "#aab7c4");
    }
}
