//! Per-turn tool limits: how many iterations, how many tool calls, how many
//! calls at once, and how many bytes of each tool result the model sees.
//!
//! The same [`ToolLimits`] type describes what a user writes (where `0`
//! means "not set") and what a bound mode resolves to (no `0` left). A field
//! left at `0` takes the default in the base limits and inherits the base in
//! a [`Mode`](crate::mode::Mode), so a mode written as
//! `ToolLimits { iterations: 5, ..Default::default() }` overrides
//! iterations only.
//!
//! ```
//! use agent_loop::ToolLimits;
//!
//! let base = ToolLimits { iterations: 3, parallel: 2, ..Default::default() }.resolve();
//! let mode = ToolLimits { calls: 7, ..Default::default() }.inherit(base);
//! assert_eq!((mode.iterations, mode.calls, mode.parallel), (3, 7, 2));
//! assert_eq!(ToolLimits::default().resolve(), ToolLimits::DEFAULTS);
//! ```

use serde::{Deserialize, Serialize};

use crate::definition::{DefinitionError, DefinitionErrorKind};

/// Tool limits for one turn. See the [module docs](self) for how unset
/// fields resolve.
///
/// | field | unit | default | allowed |
/// | --- | --- | ---: | --- |
/// | `iterations` | model responses that ask for tools, per turn | 25 | ≥ 1, or [`UNLIMITED`](Self::UNLIMITED) |
/// | `calls` | tool calls per turn, all batches together | 100 | ≥ 1, or [`UNLIMITED`](Self::UNLIMITED) |
/// | `parallel` | tool calls running at once, per batch | 8 | ≥ 1, not unlimited |
/// | `result_bytes` | model-visible bytes of one tool result | off | ≥ 256, or [`UNLIMITED`](Self::UNLIMITED) (off) |
///
/// `0` in any field means "not set". Negative values cannot be written in
/// Rust; config files go through [`ToolLimitsConfig`], which refuses them.
/// Out-of-range values (`parallel` unlimited, `result_bytes` 1 to 255) are
/// refused by [`Definition::validate`](crate::Definition::validate) as
/// [`DefinitionErrorKind::InvalidToolLimits`] for the base and
/// [`DefinitionErrorKind::InvalidMode`] for a mode.
///
/// With unlimited iterations or calls a turn still ends when the model gives
/// a final answer, on cancellation, or on an error; a caller that allows a
/// model to loop without limit must bound the turn another way (a timeout
/// on the turn, or cancelling its token).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolLimits {
    /// Model responses that ask for tools, per turn. Each batch of tool
    /// calls counts one iteration; a final answer counts none.
    pub iterations: u32,
    /// Tool calls per turn, all batches together.
    pub calls: u32,
    /// Tool calls running at once within one batch.
    pub parallel: u32,
    /// Bytes of one tool result the model sees; longer results are cut to
    /// head + marker + tail. [`UNLIMITED`](Self::UNLIMITED) turns it off.
    pub result_bytes: u32,
}

impl ToolLimits {
    /// "Not set": the default in the base limits, the base's value in a mode.
    pub const UNSET: u32 = 0;
    /// No limit. Allowed for `iterations` and `calls`, and for
    /// `result_bytes` where it means "off"; refused for `parallel`.
    pub const UNLIMITED: u32 = u32::MAX;
    /// The smallest `result_bytes` limit: below it the truncation marker
    /// would leave almost nothing of the result.
    pub const MIN_RESULT_BYTES: u32 = 256;
    /// The resolved defaults: 25 iterations, 100 calls,
    /// 8 in parallel, no result limit.
    pub const DEFAULTS: ToolLimits = ToolLimits {
        iterations: 25,
        calls: 100,
        parallel: 8,
        result_bytes: Self::UNLIMITED,
    };

    /// Resolves base limits: every unset field takes its value from
    /// [`DEFAULTS`](Self::DEFAULTS). The result has no `0` left.
    #[must_use]
    pub fn resolve(self) -> ToolLimits {
        self.inherit(Self::DEFAULTS)
    }

    /// Resolves mode limits: every unset field takes its value from `base`
    /// (itself resolved first, so the result has no `0` left).
    #[must_use]
    pub fn inherit(self, base: ToolLimits) -> ToolLimits {
        let base = if base.is_resolved() {
            base
        } else {
            base.resolve()
        };
        let pick = |own: u32, inherited: u32| if own == Self::UNSET { inherited } else { own };
        ToolLimits {
            iterations: pick(self.iterations, base.iterations),
            calls: pick(self.calls, base.calls),
            parallel: pick(self.parallel, base.parallel),
            result_bytes: pick(self.result_bytes, base.result_bytes),
        }
    }

    /// `true` when no field is [`UNSET`](Self::UNSET).
    pub fn is_resolved(&self) -> bool {
        [
            self.iterations,
            self.calls,
            self.parallel,
            self.result_bytes,
        ]
        .iter()
        .all(|&v| v != Self::UNSET)
    }

    /// The iteration limit, `None` when unlimited or unset.
    pub fn max_iterations(&self) -> Option<u32> {
        Self::bounded(self.iterations)
    }

    /// The call limit, `None` when unlimited or unset.
    pub fn max_calls(&self) -> Option<u32> {
        Self::bounded(self.calls)
    }

    /// The result limit in bytes, `None` when off or unset.
    pub fn max_result_bytes(&self) -> Option<usize> {
        Self::bounded(self.result_bytes).map(|v| v as usize)
    }

    fn bounded(value: u32) -> Option<u32> {
        (value != Self::UNSET && value != Self::UNLIMITED).then_some(value)
    }

    /// The first field that cannot be valid, as `(field, value)`.
    pub(crate) fn first_invalid(&self) -> Option<(&'static str, String)> {
        if self.parallel == Self::UNLIMITED {
            return Some(("parallel", "unlimited".to_owned()));
        }
        if self.result_bytes != Self::UNSET
            && self.result_bytes != Self::UNLIMITED
            && self.result_bytes < Self::MIN_RESULT_BYTES
        {
            return Some(("result_bytes", self.result_bytes.to_string()));
        }
        None
    }
}

/// One limit as written in a configuration file: a whole number, or the word
/// `"unlimited"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LimitValue {
    /// A count; `0` means "not set", negative values are refused.
    Number(i64),
    /// `"unlimited"`; any other word is refused.
    Word(String),
}

impl Default for LimitValue {
    fn default() -> Self {
        LimitValue::Number(0)
    }
}

/// [`ToolLimits`] as they come from a configuration file, where anything can
/// be written: negative numbers, numbers too large, words.
///
/// Convert base limits with `ToolLimits::try_from(config)`: a value that
/// cannot be a limit is a [`DefinitionError`] of kind
/// [`InvalidToolLimits`](DefinitionErrorKind::InvalidToolLimits) naming the
/// field (`tool_limits.iterations`) and the value written. Convert a mode's
/// overrides with [`for_mode`](Self::for_mode), whose errors are of kind
/// [`InvalidMode`](DefinitionErrorKind::InvalidMode).
///
/// ```
/// use agent_loop::{DefinitionErrorKind, ToolLimits, ToolLimitsConfig};
///
/// let config: ToolLimitsConfig = serde_json::from_str(r#"{"iterations": -1}"#).unwrap();
/// let error = ToolLimits::try_from(config).unwrap_err();
/// assert_eq!(error.kind, DefinitionErrorKind::InvalidToolLimits);
/// assert_eq!(error.field, "tool_limits.iterations");
///
/// let config: ToolLimitsConfig =
///     serde_json::from_str(r#"{"calls": "unlimited", "parallel": 4}"#).unwrap();
/// let limits = ToolLimits::try_from(config).unwrap();
/// assert_eq!((limits.calls, limits.parallel), (ToolLimits::UNLIMITED, 4));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolLimitsConfig {
    /// See [`ToolLimits::iterations`].
    pub iterations: LimitValue,
    /// See [`ToolLimits::calls`].
    pub calls: LimitValue,
    /// See [`ToolLimits::parallel`].
    pub parallel: LimitValue,
    /// See [`ToolLimits::result_bytes`].
    pub result_bytes: LimitValue,
}

impl TryFrom<ToolLimitsConfig> for ToolLimits {
    type Error = DefinitionError;

    /// Converts base limits. Errors: a negative number, a number of
    /// `u32::MAX` or more, or a word other than `"unlimited"`, as
    /// [`DefinitionErrorKind::InvalidToolLimits`] with the field
    /// `tool_limits.<name>`. Range rules (`parallel` unlimited,
    /// `result_bytes` below 256) are checked here too, so a converted value
    /// is valid for the base.
    fn try_from(config: ToolLimitsConfig) -> Result<Self, Self::Error> {
        config.convert(DefinitionErrorKind::InvalidToolLimits, "tool_limits")
    }
}

impl ToolLimitsConfig {
    /// Converts the limit overrides of the mode named `mode`, for
    /// [`Mode::tool_limits`](crate::mode::Mode::tool_limits).
    ///
    /// Errors: as for the base (`ToolLimits::try_from`), but of kind
    /// [`DefinitionErrorKind::InvalidMode`] with the field
    /// `modes["<mode>"].tool_limits.<name>`.
    ///
    /// ```
    /// use agent_loop::{DefinitionErrorKind, ToolLimitsConfig};
    ///
    /// let config: ToolLimitsConfig = serde_json::from_str(r#"{"calls": -2}"#).unwrap();
    /// let error = config.for_mode("review").unwrap_err();
    /// assert_eq!(error.kind, DefinitionErrorKind::InvalidMode);
    /// assert_eq!(error.field, r#"modes["review"].tool_limits.calls"#);
    /// ```
    pub fn for_mode(self, mode: &str) -> Result<ToolLimits, DefinitionError> {
        self.convert(
            DefinitionErrorKind::InvalidMode,
            &format!("modes[{mode:?}].tool_limits"),
        )
    }

    fn convert(
        &self,
        kind: DefinitionErrorKind,
        prefix: &str,
    ) -> Result<ToolLimits, DefinitionError> {
        let invalid = |name: &str, shown: String| {
            DefinitionError::new(kind, format!("{prefix}.{name}"), shown)
        };
        let field = |name: &'static str, value: &LimitValue| -> Result<u32, DefinitionError> {
            match value {
                LimitValue::Number(n) => u32::try_from(*n)
                    .ok()
                    .filter(|&v| v != ToolLimits::UNLIMITED)
                    .ok_or_else(|| invalid(name, n.to_string())),
                LimitValue::Word(word) if word == "unlimited" => Ok(ToolLimits::UNLIMITED),
                LimitValue::Word(word) => Err(invalid(name, format!("{word:?}"))),
            }
        };
        let limits = ToolLimits {
            iterations: field("iterations", &self.iterations)?,
            calls: field("calls", &self.calls)?,
            parallel: field("parallel", &self.parallel)?,
            result_bytes: field("result_bytes", &self.result_bytes)?,
        };
        match limits.first_invalid() {
            Some((name, value)) => Err(invalid(name, value)),
            None => Ok(limits),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn default_resolves_to_design_defaults() {
        let resolved = ToolLimits::default().resolve();
        assert_eq!(
            (resolved.iterations, resolved.calls, resolved.parallel),
            (25, 100, 8)
        );
        assert_eq!(resolved.max_result_bytes(), None);
        assert!(resolved.is_resolved());
    }

    #[test]
    fn mode_overrides_only_the_fields_it_sets() {
        let base = ToolLimits {
            iterations: 3,
            parallel: 2,
            ..Default::default()
        }
        .resolve();
        let mode = ToolLimits {
            calls: 7,
            ..Default::default()
        }
        .inherit(base);
        assert_eq!((mode.iterations, mode.calls, mode.parallel), (3, 7, 2));
    }

    #[test]
    fn config_refuses_negative_huge_and_unknown_words() {
        for (json, field) in [
            (r#"{"calls": -5}"#, "tool_limits.calls"),
            (r#"{"parallel": 4294967296}"#, "tool_limits.parallel"),
            (r#"{"iterations": "lots"}"#, "tool_limits.iterations"),
            (r#"{"parallel": "unlimited"}"#, "tool_limits.parallel"),
            (r#"{"result_bytes": 255}"#, "tool_limits.result_bytes"),
        ] {
            let config: ToolLimitsConfig = serde_json::from_str(json).unwrap();
            let error = ToolLimits::try_from(config).unwrap_err();
            assert_eq!(error.kind, DefinitionErrorKind::InvalidToolLimits, "{json}");
            assert_eq!(error.field, field, "{json}");
        }
    }

    proptest! {
        // Resolution never leaves a zero, and a set field always wins.
        #[test]
        fn resolution_keeps_set_fields_and_fills_the_rest(
            base in any::<[u32; 4]>(), mode in any::<[u32; 4]>()
        ) {
            let base = ToolLimits { iterations: base[0], calls: base[1], parallel: base[2], result_bytes: base[3] };
            let mode = ToolLimits { iterations: mode[0], calls: mode[1], parallel: mode[2], result_bytes: mode[3] };
            let resolved_base = base.resolve();
            let resolved = mode.inherit(resolved_base);
            prop_assert!(resolved.is_resolved());
            let pairs = [
                (mode.iterations, resolved.iterations, resolved_base.iterations),
                (mode.calls, resolved.calls, resolved_base.calls),
                (mode.parallel, resolved.parallel, resolved_base.parallel),
                (mode.result_bytes, resolved.result_bytes, resolved_base.result_bytes),
            ];
            for (own, got, inherited) in pairs {
                prop_assert_eq!(got, if own == 0 { inherited } else { own });
            }
        }
    }
}
