//! What reaches a worker's session outside the page's requests: its import workers' messages,
//! its message to itself, and the reads of a file's stream, each in a task of its own (never
//! while the session is borrowed). A leaf: the pool, the stream readers and the session all use
//! it.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

/// What reaches the session outside the page's requests, each in its own task (never while
/// the session is borrowed).
pub enum Wake {
    /// Import worker `i` posted a message.
    Worker(usize, JsValue),
    /// Import worker `i` failed.
    WorkerFailed(usize),
    /// This worker's message to itself (`Pool::again`): read a range here.
    Own,
    /// A read of a trace's stream (`stream`) resolved with `{done, value}`, or failed.
    Stream(Result<JsValue, JsValue>),
    /// A read of pooled import `n`'s ranges (`range_reader`) resolved, or failed.
    Ranges(u32, Result<JsValue, JsValue>),
}

/// How a [`Wake`] reaches the session.
pub type Link = Rc<dyn Fn(Wake)>;
