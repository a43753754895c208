//! Network elements: packets, links (channels), routing.

pub mod link;
pub mod packet;
pub mod routing;
