//! Network elements: packets, links (channels), routing.

pub mod link;
pub mod packet;
pub mod rate;
pub mod routing;
