//! [`SessionId`] and [`LoopId`]: who a binding belongs to.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            #[doc = concat!("A new random (version 4) ", $what, ".")]
            #[allow(clippy::new_without_default)] // a default id would be the nil one, which is invalid
            pub fn new() -> Self {
                Self(Uuid::new_v4())
            }

            #[doc = concat!("A ", $what, " from a UUID you already have (e.g. from your store). ")]
            #[doc = "The nil UUID is accepted here and refused by `bind`."]
            pub const fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            /// The UUID.
            pub const fn as_uuid(&self) -> Uuid {
                self.0
            }

            /// `true` for the nil UUID, which `bind` refuses.
            pub fn is_nil(&self) -> bool {
                self.0.is_nil()
            }
        }

        impl From<Uuid> for $name {
            fn from(uuid: Uuid) -> Self {
                Self(uuid)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;

            /// Parses the hyphenated or simple UUID form.
            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(text).map(Self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

uuid_id!(
    /// The id of one live session (one user's conversation), a UUID. The nil
    /// UUID is invalid: `bind` refuses it as
    /// [`BindErrorKind::InvalidSessionId`](crate::bind::BindErrorKind::InvalidSessionId)
    /// before any factory runs.
    SessionId,
    "session id"
);

uuid_id!(
    /// The id of one agent loop within a session, a UUID. The nil UUID is
    /// invalid: `bind` refuses it as
    /// [`BindErrorKind::InvalidLoopId`](crate::bind::BindErrorKind::InvalidLoopId)
    /// before any factory runs.
    LoopId,
    "loop id"
);
