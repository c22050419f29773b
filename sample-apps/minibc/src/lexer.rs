//! Source text -> tokens.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Num(i64),
    Ident(String),
    Print,
    If,
    Else,
    For,
    Break,
    Sym(&'static str),
}

const SYMBOLS: [&str; 19] =
    ["<=", ">=", "==", "!=", "+", "-", "*", "/", "%", "<", ">", "=", "(", ")", "{", "}", ";", ",", "!"];

pub fn lex(src: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let bytes = src.as_bytes();
    let mut i = 0;
    let mut line = 1;
    'outer: while i < bytes.len() {
        let c = bytes[i] as char;
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let n = src[start..i].parse().map_err(|_| format!("line {line}: number too large"))?;
            out.push(Token::Num(n));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(match &src[start..i] {
                "print" => Token::Print,
                "if" => Token::If,
                "else" => Token::Else,
                "for" => Token::For,
                "break" => Token::Break,
                name => Token::Ident(name.to_string()),
            });
        } else {
            for s in SYMBOLS {
                if src[i..].starts_with(s) {
                    out.push(Token::Sym(s));
                    i += s.len();
                    continue 'outer;
                }
            }
            return Err(format!("line {line}: unexpected character `{c}`"));
        }
    }
    Ok(out)
}
