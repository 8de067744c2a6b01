// TEMPORARY stub, replaced by the `pure` branch.
pub const STRUCTURED_OUTPUT_TOOL_NAME: &str = "structured_output";
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NameRules {
    #[default]
    OpenAi,
    Portable,
    Mcp,
}
impl NameRules {
    pub fn max_len(self) -> usize {
        match self {
            NameRules::Mcp => 128,
            _ => 64,
        }
    }
    pub fn check(self, name: &str) -> Result<(), NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        let len = name.chars().count();
        if len > self.max_len() {
            return Err(NameError::TooLong {
                len,
                max: self.max_len(),
            });
        }
        for (position, character) in name.chars().enumerate() {
            let ok = character.is_ascii_alphanumeric()
                || character == '_'
                || character == '-'
                || (self == NameRules::Mcp && character == '.');
            if !ok {
                return Err(NameError::InvalidCharacter {
                    character,
                    position,
                });
            }
        }
        Ok(())
    }
    pub fn sanitize(self, name: &str) -> String {
        name.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(self.max_len())
            .collect()
    }
}
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    #[error("empty")]
    Empty,
    #[error("too long")]
    TooLong { len: usize, max: usize },
    #[error("character `{character}` at position {position} is not allowed")]
    InvalidCharacter { character: char, position: usize },
    #[error("first")]
    InvalidFirstCharacter { character: char },
}
