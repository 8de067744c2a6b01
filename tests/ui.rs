//! Lifecycle misuse must not compile, and the compiler must say why
//! (DESIGN.md section 1): each case in `ui-tests/` is named after the
//! misuse, its `.stderr` holds the expected message.

// trybuild builds every dev-dependency again in its own target folder; the
// cases use no feature, so the build without features checks them and the
// one with features does not build it all a second time.
#[test]
#[cfg_attr(
    any(feature = "openai", feature = "anthropic", feature = "mcp"),
    ignore = "the UI cases use no feature: checked by the build without features"
)]
fn lifecycle_misuse_does_not_compile() {
    trybuild::TestCases::new().compile_fail("ui-tests/*.rs");
}
