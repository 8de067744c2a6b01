//! Lifecycle misuse must not compile, and the compiler must say why
//! (DESIGN.md section 1): each case in `ui-tests/` is named after the
//! misuse, its `.stderr` holds the expected message.

#[test]
fn lifecycle_misuse_does_not_compile() {
    trybuild::TestCases::new().compile_fail("ui-tests/*.rs");
}
