use std::io::Read;
use std::time::Instant;
use jarvis_engine::import::framer::{FrameSink, Framer};
use jarvis_engine::import::event::parse_event;
struct Nop(u64, bool);
impl FrameSink for Nop {
    fn event(&mut self, _i: u64, b: &[u8], _o: u64) { self.0 += b.len() as u64; if self.1 { let _ = std::hint::black_box(parse_event(b, |k| k == "correlation" || k == "stream" || k == "Input Dims")); } }
    fn top_level(&mut self, _k: &str, _v: &[u8]) {}
}
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let parse = std::env::args().nth(2).is_some();
    let mut f = std::fs::File::open(&path).unwrap();
    let mut buf = vec![0u8; 16 << 20];
    let t0 = Instant::now();
    let mut fr = Framer::new();
    let mut sink = Nop(0, parse);
    loop { let n = f.read(&mut buf).unwrap(); if n == 0 { break; } fr.feed(&buf[..n], &mut sink).unwrap(); }
    println!("{:.3}s events bytes {}", t0.elapsed().as_secs_f64(), sink.0);
}
