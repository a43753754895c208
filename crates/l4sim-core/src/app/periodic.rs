//! Small periodic messages: telemetry or control messages of a fixed size every interval,
//! each sent at once (a message is a frame of its own, usually one packet).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{check_deadline, default_deadline};

/// A periodic message source's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PeriodicConfig {
    /// Time between messages (ns).
    pub interval_ns: u64,
    /// Payload bytes of each message (default 100).
    #[serde(default = "default_message_bytes")]
    pub message_bytes: u32,
    /// A message is late when its delay exceeds this (ns; default 150 ms).
    #[serde(default = "default_deadline")]
    pub deadline_ns: u64,
}

fn default_message_bytes() -> u32 {
    100
}

impl PeriodicConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.interval_ns == 0 {
            return Err("the message interval must be positive".into());
        }
        if self.message_bytes == 0 {
            return Err("the message size must be positive".into());
        }
        check_deadline(self.deadline_ns)
    }
}
