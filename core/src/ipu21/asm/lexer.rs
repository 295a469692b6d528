//! Tokens of the assembly syntax. Comments are `#`, `//` (to end of line) and
//! `/* ... */`; statements end at a newline or `;`.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::error::{AsmErrorKind, Loc};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// A name: symbol, label, mnemonic or directive (`.text`, `.Lfoo`, `foo`).
    Ident(String),
    /// `$name` (register or CSR); the `$` is kept.
    Dollar(String),
    Num(i64),
    Str(String),
    /// `.` on its own: the current location.
    Dot,
    Comma,
    Colon,
    LParen,
    RParen,
    Plus,
    PlusEq,
    Minus,
    Star,
    Slash,
    Percent,
    Shl,
    Shr,
    Amp,
    Pipe,
    Caret,
    Tilde,
    Equals,
    At,
    /// End of statement (newline or `;`).
    End,
}

#[derive(Clone, Debug)]
pub(crate) struct Token {
    pub tok: Tok,
    pub loc: Loc,
}

impl Tok {
    /// How the token reads in an error message.
    pub fn text(&self) -> String {
        match self {
            Tok::Ident(s) | Tok::Dollar(s) => s.clone(),
            Tok::Num(n) => n.to_string(),
            Tok::Str(s) => alloc::format!("\"{s}\""),
            Tok::Dot => ".".into(),
            Tok::Comma => ",".into(),
            Tok::Colon => ":".into(),
            Tok::LParen => "(".into(),
            Tok::RParen => ")".into(),
            Tok::Plus => "+".into(),
            Tok::PlusEq => "+=".into(),
            Tok::Minus => "-".into(),
            Tok::Star => "*".into(),
            Tok::Slash => "/".into(),
            Tok::Percent => "%".into(),
            Tok::Shl => "<<".into(),
            Tok::Shr => ">>".into(),
            Tok::Amp => "&".into(),
            Tok::Pipe => "|".into(),
            Tok::Caret => "^".into(),
            Tok::Tilde => "~".into(),
            Tok::Equals => "=".into(),
            Tok::At => "@".into(),
            Tok::End => "end of line".into(),
        }
    }
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '.'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$'
}

fn parse_number(text: &str) -> Option<i64> {
    let lower = text.to_ascii_lowercase();
    let (digits, radix) = if let Some(h) = lower.strip_prefix("0x") {
        (h, 16)
    } else if let Some(b) = lower.strip_prefix("0b") {
        (b, 2)
    } else {
        (lower.as_str(), 10)
    };
    let digits: String = digits.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() {
        return None;
    }
    u64::from_str_radix(&digits, radix)
        .ok()
        .and_then(|v| i64::try_from(v).ok())
}

/// Splits `src` into tokens, or reports the first lexical error and its position.
pub(crate) fn lex(src: &str) -> Result<Vec<Token>, (Loc, AsmErrorKind)> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        let loc = Loc { line, col };
        let advance = |n: usize, i: &mut usize, col: &mut u32| {
            *i += n;
            *col += n as u32;
        };
        match c {
            '\n' => {
                out.push(Token { tok: Tok::End, loc });
                i += 1;
                line += 1;
                col = 1;
            }
            ' ' | '\t' | '\r' => advance(1, &mut i, &mut col),
            ';' => {
                out.push(Token { tok: Tok::End, loc });
                advance(1, &mut i, &mut col);
            }
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    advance(1, &mut i, &mut col);
                }
            }
            '/' if at(i + 1) == '/' => {
                while i < chars.len() && chars[i] != '\n' {
                    advance(1, &mut i, &mut col);
                }
            }
            '/' if at(i + 1) == '*' => {
                advance(2, &mut i, &mut col);
                loop {
                    if i >= chars.len() {
                        return Err((loc, AsmErrorKind::UnterminatedComment));
                    }
                    if chars[i] == '*' && at(i + 1) == '/' {
                        advance(2, &mut i, &mut col);
                        break;
                    }
                    if chars[i] == '\n' {
                        i += 1;
                        line += 1;
                        col = 1;
                    } else {
                        advance(1, &mut i, &mut col);
                    }
                }
            }
            '"' => {
                advance(1, &mut i, &mut col);
                let mut s = String::new();
                loop {
                    match chars.get(i) {
                        None | Some('\n') => return Err((loc, AsmErrorKind::UnterminatedString)),
                        Some('"') => {
                            advance(1, &mut i, &mut col);
                            break;
                        }
                        Some(&ch) => {
                            s.push(ch);
                            advance(1, &mut i, &mut col);
                        }
                    }
                }
                out.push(Token {
                    tok: Tok::Str(s),
                    loc,
                });
            }
            '$' => {
                let start = i;
                advance(1, &mut i, &mut col);
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    advance(1, &mut i, &mut col);
                }
                let name: String = chars[start..i].iter().collect();
                if name.len() == 1 {
                    return Err((
                        loc,
                        AsmErrorKind::Expected {
                            what: "register or CSR name after '$'",
                            found: at(i).to_string(),
                        },
                    ));
                }
                out.push(Token {
                    tok: Tok::Dollar(name),
                    loc,
                });
            }
            c if c.is_ascii_digit() => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    advance(1, &mut i, &mut col);
                }
                let text: String = chars[start..i].iter().collect();
                match parse_number(&text) {
                    Some(n) => out.push(Token {
                        tok: Tok::Num(n),
                        loc,
                    }),
                    None => return Err((loc, AsmErrorKind::BadNumber(text))),
                }
            }
            c if is_ident_start(c) => {
                let start = i;
                while i < chars.len() && is_ident_char(chars[i]) {
                    advance(1, &mut i, &mut col);
                }
                let text: String = chars[start..i].iter().collect();
                let tok = if text == "." {
                    Tok::Dot
                } else {
                    Tok::Ident(text)
                };
                out.push(Token { tok, loc });
            }
            _ => {
                let two = (c, at(i + 1));
                let (tok, n) = match two {
                    ('<', '<') => (Tok::Shl, 2),
                    ('>', '>') => (Tok::Shr, 2),
                    ('+', '=') => (Tok::PlusEq, 2),
                    (',', _) => (Tok::Comma, 1),
                    (':', _) => (Tok::Colon, 1),
                    ('(', _) => (Tok::LParen, 1),
                    (')', _) => (Tok::RParen, 1),
                    ('+', _) => (Tok::Plus, 1),
                    ('-', _) => (Tok::Minus, 1),
                    ('*', _) => (Tok::Star, 1),
                    ('/', _) => (Tok::Slash, 1),
                    ('%', _) => (Tok::Percent, 1),
                    ('&', _) => (Tok::Amp, 1),
                    ('|', _) => (Tok::Pipe, 1),
                    ('^', _) => (Tok::Caret, 1),
                    ('~', _) => (Tok::Tilde, 1),
                    ('=', _) => (Tok::Equals, 1),
                    ('@', _) => (Tok::At, 1),
                    _ => {
                        return Err((loc, AsmErrorKind::UnexpectedChar(c)));
                    }
                };
                out.push(Token { tok, loc });
                advance(n, &mut i, &mut col);
            }
        }
    }
    out.push(Token {
        tok: Tok::End,
        loc: Loc { line, col },
    });
    Ok(out)
}
