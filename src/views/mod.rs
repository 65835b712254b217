//! Views of the page, one file each.

pub mod overview;
pub mod platform;
