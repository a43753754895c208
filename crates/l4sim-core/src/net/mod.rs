//! Network elements: links (channels), rate schedules, routing.

pub mod link;
pub mod rate;
pub mod routing;
