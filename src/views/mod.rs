//! Views of the page, one file each.

pub mod categories;
pub mod compare;
pub mod critical_path;
pub mod diagnostics;
pub mod diff_tree;
pub mod idle;
pub mod kernels;
pub mod memory;
pub mod ops;
pub mod overview;
pub mod platform;
pub mod ranks;
pub mod roofline;
pub mod steps;
pub mod timeline;
