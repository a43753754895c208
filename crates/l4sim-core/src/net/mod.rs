//! Network elements: links (channels), rate schedules, slotting, routing.

pub mod docsis;
pub mod link;
pub mod rate;
pub mod routing;
pub mod slot;
pub mod wifi;
