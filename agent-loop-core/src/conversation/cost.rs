//! [`Prices`] and [`Cost`]: what a model's tokens cost, in US dollars.

use std::fmt;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

use super::Usage;

/// A model's prices in US dollars per million tokens, the shape of
/// models.dev's `cost` object (its base prices), which the model catalog
/// of `agent-loop-providers` fills; [`cost`](Self::cost) prices a
/// [`Usage`].
///
/// What models.dev's `cost` holds beyond these is left out: audio prices
/// (`input_audio`, `output_audio`) and the higher prices above a prompt
/// size (`tiers`, `context_over_200k`: GPT-5.4's past 272,000 tokens, for
/// one).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Prices {
    /// A prompt token not read from the cache (`cost.input`).
    pub input: f64,
    /// An output token (`cost.output`).
    pub output: f64,
    /// A prompt token read from the prompt cache (`cost.cache_read`);
    /// `None` where the provider has no cache or models.dev gives no price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// A prompt token written to the prompt cache, where writing costs
    /// extra (`cost.cache_write`: Anthropic's cache writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// A reasoning token, where it is priced apart from output
    /// (`cost.reasoning`); `None` means reasoning tokens are billed as
    /// output tokens, as models.dev means it ([`Prices::reasoning_or_output`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<f64>,
}

impl Prices {
    /// Prices for input and output tokens, in USD per million tokens; no
    /// cache or reasoning price of their own.
    pub fn new(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cache_read: None,
            cache_write: None,
            reasoning: None,
        }
    }

    /// The price of a prompt token read from the cache.
    #[must_use]
    pub fn cache_read(mut self, per_million: f64) -> Self {
        self.cache_read = Some(per_million);
        self
    }

    /// The price of a prompt token written to the cache.
    #[must_use]
    pub fn cache_write(mut self, per_million: f64) -> Self {
        self.cache_write = Some(per_million);
        self
    }

    /// The price of a reasoning token, where it differs from output.
    #[must_use]
    pub fn reasoning(mut self, per_million: f64) -> Self {
        self.reasoning = Some(per_million);
        self
    }

    /// What a reasoning token costs, per million: its own price, or the
    /// output price where it has none.
    ///
    /// ```
    /// use agent_loop_core::conversation::Prices;
    ///
    /// assert_eq!(Prices::new(1.0, 4.0).reasoning_or_output(), 4.0);
    /// assert_eq!(Prices::new(1.0, 4.0).reasoning(8.0).reasoning_or_output(), 8.0);
    /// ```
    pub fn reasoning_or_output(&self) -> f64 {
        self.reasoning.unwrap_or(self.output)
    }

    /// What `usage` costs at these prices: each kind of token at its own
    /// price, [`Usage`]'s fields read as the crate fills them for every
    /// provider (`input_tokens` counts every prompt token, cached or not):
    ///
    /// - prompt tokens neither read from nor written to the cache
    ///   (`input_tokens - cache_read_tokens - cache_write_tokens`) at
    ///   `input`;
    /// - `cache_read_tokens` at `cache_read`, and `cache_write_tokens` at
    ///   `cache_write` (each at `input` where it has no price);
    /// - output tokens that are not reasoning at `output`, and
    ///   `reasoning_tokens` at [`reasoning_or_output`](Self::reasoning_or_output).
    ///
    /// A price that is negative or not a number counts as 0. The sum is
    /// exact to a picodollar per token (prices are rounded to whole
    /// picodollars per token first: $3 per million is 3,000,000) and
    /// saturates rather than wraps.
    ///
    /// ```
    /// use agent_loop_core::conversation::{Prices, Usage};
    ///
    /// // Claude Sonnet 4.5's prices: $3 in, $15 out, $0.30 cache reads, $3.75 writes.
    /// let prices = Prices::new(3.0, 15.0).cache_read(0.3).cache_write(3.75);
    /// let mut usage = Usage::new(10_000, 2_000);
    /// usage.cache_read_tokens = 8_000;
    /// // 2,000 × $3 + 8,000 × $0.30 + 2,000 × $15, per million tokens.
    /// assert_eq!(prices.cost(&usage).usd(), 0.0384);
    /// ```
    pub fn cost(&self, usage: &Usage) -> Cost {
        let cached = usage
            .cache_read_tokens
            .saturating_add(usage.cache_write_tokens);
        let fresh = usage.input_tokens.saturating_sub(cached);
        let reasoning = usage.reasoning_tokens.min(usage.output_tokens);
        let answer = usage.output_tokens - reasoning;
        let parts = [
            (fresh, self.input),
            (
                usage.cache_read_tokens,
                self.cache_read.unwrap_or(self.input),
            ),
            (
                usage.cache_write_tokens,
                self.cache_write.unwrap_or(self.input),
            ),
            (answer, self.output),
            (reasoning, self.reasoning_or_output()),
        ];
        Cost(parts.into_iter().fold(0u64, |sum, (tokens, price)| {
            sum.saturating_add(tokens.saturating_mul(picodollars_per_token(price)))
        }))
    }
}

/// A price in USD per million tokens as whole picodollars per token
/// ($1 per million is 1,000,000): 0 for a negative or not-a-number price.
fn picodollars_per_token(per_million: f64) -> u64 {
    if per_million.is_finite() && per_million > 0.0 {
        // In range: a price above $18 million per million tokens saturates.
        (per_million * 1e6).round().min(u64::MAX as f64) as u64
    } else {
        0
    }
}

/// An amount of US dollars, exact to a picodollar (10⁻¹² USD): what
/// [`Prices::cost`] gives. Adds up without rounding; saturates at about
/// 18.4 million dollars. Shown as dollars with six decimals (`$0.038400`);
/// serialised as its whole picodollars.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Cost(u64);

impl Cost {
    /// Nothing.
    pub const ZERO: Self = Self(0);

    /// `picodollars` (10⁻¹² USD).
    pub const fn from_picodollars(picodollars: u64) -> Self {
        Self(picodollars)
    }

    /// The amount in picodollars.
    pub const fn picodollars(self) -> u64 {
        self.0
    }

    /// The amount in dollars (rounded to the nearest `f64`).
    pub fn usd(self) -> f64 {
        self.0 as f64 / 1e12
    }

    /// `true` for nothing ([`Cost::ZERO`]).
    pub fn is_zero(&self) -> bool {
        self.0 == 0
    }
}

impl Add for Cost {
    type Output = Cost;

    /// Saturating.
    fn add(self, other: Cost) -> Cost {
        Cost(self.0.saturating_add(other.0))
    }
}

impl AddAssign for Cost {
    fn add_assign(&mut self, other: Cost) {
        *self = *self + other;
    }
}

impl fmt::Display for Cost {
    /// `$` and the dollars with six decimals, rounded: `$0.038400`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Rounded to whole microdollars, in integers.
        let micros = self.0 / 1_000_000 + u64::from(self.0 % 1_000_000 >= 500_000);
        write!(f, "${}.{:06}", micros / 1_000_000, micros % 1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_token_costs_its_own_price() {
        let prices = Prices::new(2.0, 8.0)
            .cache_read(0.5)
            .cache_write(2.5)
            .reasoning(10.0);
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 300_000,
            cache_read_tokens: 400_000,
            cache_write_tokens: 100_000,
            reasoning_tokens: 200_000,
        };
        // 500k fresh × 2 + 400k × 0.5 + 100k × 2.5 + 100k × 8 + 200k × 10.
        let expected = 1.0 + 0.2 + 0.25 + 0.8 + 2.0;
        assert_eq!(
            prices.cost(&usage),
            Cost::from_picodollars(4_250_000_000_000)
        );
        assert!((prices.cost(&usage).usd() - expected).abs() < 1e-12);
        // Without cache or reasoning prices: input and output prices.
        let plain = Prices::new(2.0, 8.0);
        assert_eq!(plain.cost(&usage).usd(), 1.0 * 2.0 + 0.3 * 8.0);
        assert_eq!(prices.cost(&usage).to_string(), "$4.250000");
        assert_eq!(
            Cost::from_picodollars(38_399_500_000).to_string(),
            "$0.038400"
        );
    }

    #[test]
    fn bad_prices_cost_nothing_and_huge_usage_saturates() {
        let prices = Prices::new(f64::NAN, -1.0);
        assert_eq!(prices.cost(&Usage::new(5, 5)), Cost::ZERO);
        let usage = Usage::new(u64::MAX, u64::MAX);
        assert_eq!(
            Prices::new(1.0, 1.0).cost(&usage),
            Cost::from_picodollars(u64::MAX)
        );
        assert_eq!(
            Cost::from_picodollars(u64::MAX) + Cost::from_picodollars(1),
            Cost::from_picodollars(u64::MAX)
        );
        // Reasoning above output (a provider's inconsistency) is output.
        let mut odd = Usage::new(0, 10);
        odd.reasoning_tokens = 50;
        assert_eq!(
            Prices::new(0.0, 1.0).reasoning(2.0).cost(&odd),
            Cost::from_picodollars(20_000_000)
        );
    }
}
