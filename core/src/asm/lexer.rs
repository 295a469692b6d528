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
    let b = text.as_bytes();
    let (digits, radix) = match b {
        [b'0', b'x' | b'X', ..] => (&text[2..], 16),
        [b'0', b'b' | b'B', ..] => (&text[2..], 2),
        _ => (text, 10),
    };
    let value = if digits.contains('_') {
        let digits: String = digits.chars().filter(|&c| c != '_').collect();
        if digits.is_empty() {
            return None;
        }
        u64::from_str_radix(&digits, radix)
    } else {
        if digits.is_empty() {
            return None;
        }
        u64::from_str_radix(digits, radix)
    };
    value.ok().and_then(|v| i64::try_from(v).ok())
}

/// The tokens of one source text, read a statement at a time (a tile
/// program's text is never held as one token list). Positions count
/// characters, as an editor does.
pub(crate) struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    i: usize,
    line: u32,
    col: u32,
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Self {
        Lexer {
            src,
            bytes: src.as_bytes(),
            i: 0,
            line: 1,
            col: 1,
        }
    }

    /// Where the next token would start.
    pub fn loc(&self) -> Loc {
        Loc {
            line: self.line,
            col: self.col,
        }
    }

    fn at(&self, i: usize) -> u8 {
        self.bytes.get(i).copied().unwrap_or(0)
    }

    /// The character starting at byte `i` (`'\0'` past the end).
    fn char_at(&self, i: usize) -> char {
        self.src
            .get(i..)
            .and_then(|s| s.chars().next())
            .unwrap_or('\0')
    }

    /// Steps over `n` ASCII bytes on the current line.
    fn advance(&mut self, n: usize) {
        self.i += n;
        self.col += n as u32;
    }

    /// Steps over one byte of any character: a column per character (its
    /// leading byte), a new line after `\n`.
    fn step_any(&mut self) {
        let b = self.bytes[self.i];
        self.i += 1;
        if b == b'\n' {
            self.line += 1;
            self.col = 1;
        } else if b & 0xC0 != 0x80 {
            self.col += 1;
        }
    }

    /// Clears `out` and fills it with the next statement's tokens (up to a
    /// newline or `;`, not included); `false` once the text is used up.
    pub fn next_statement(&mut self, out: &mut Vec<Token>) -> Result<bool, (Loc, AsmErrorKind)> {
        out.clear();
        loop {
            match self.next_token()? {
                Some(Token { tok: Tok::End, .. }) => return Ok(true),
                Some(t) => out.push(t),
                None => return Ok(!out.is_empty()),
            }
        }
    }

    /// The next token (`Tok::End` for a newline or `;`), `None` at the end
    /// of the text.
    pub fn next_token(&mut self) -> Result<Option<Token>, (Loc, AsmErrorKind)> {
        let len = self.bytes.len();
        while self.i < len {
            let c = self.bytes[self.i];
            let loc = self.loc();
            match c {
                b'\n' => {
                    self.step_any();
                    return Ok(Some(Token { tok: Tok::End, loc }));
                }
                b' ' | b'\t' | b'\r' => self.advance(1),
                b';' => {
                    self.advance(1);
                    return Ok(Some(Token { tok: Tok::End, loc }));
                }
                b'#' => self.skip_line(),
                b'/' if self.at(self.i + 1) == b'/' => self.skip_line(),
                b'/' if self.at(self.i + 1) == b'*' => {
                    self.advance(2);
                    loop {
                        if self.i >= len {
                            return Err((loc, AsmErrorKind::UnterminatedComment));
                        }
                        if self.bytes[self.i] == b'*' && self.at(self.i + 1) == b'/' {
                            self.advance(2);
                            break;
                        }
                        self.step_any();
                    }
                }
                b'"' => {
                    self.advance(1);
                    let start = self.i;
                    loop {
                        match self.bytes.get(self.i) {
                            None | Some(b'\n') => {
                                return Err((loc, AsmErrorKind::UnterminatedString))
                            }
                            Some(b'"') => break,
                            Some(_) => self.step_any(),
                        }
                    }
                    let text = String::from(&self.src[start..self.i]);
                    self.advance(1);
                    return Ok(Some(Token {
                        tok: Tok::Str(text),
                        loc,
                    }));
                }
                b'$' => {
                    let start = self.i;
                    self.advance(1);
                    while self.i < len
                        && (self.bytes[self.i].is_ascii_alphanumeric()
                            || self.bytes[self.i] == b'_')
                    {
                        self.advance(1);
                    }
                    if self.i - start == 1 {
                        return Err((
                            loc,
                            AsmErrorKind::Expected {
                                what: "register or CSR name after '$'",
                                found: self.char_at(self.i).to_string(),
                            },
                        ));
                    }
                    let name = String::from(&self.src[start..self.i]);
                    return Ok(Some(Token {
                        tok: Tok::Dollar(name),
                        loc,
                    }));
                }
                c if c.is_ascii_digit() => {
                    let start = self.i;
                    while self.i < len
                        && (self.bytes[self.i].is_ascii_alphanumeric()
                            || self.bytes[self.i] == b'_')
                    {
                        self.advance(1);
                    }
                    let text = &self.src[start..self.i];
                    return match parse_number(text) {
                        Some(n) => Ok(Some(Token {
                            tok: Tok::Num(n),
                            loc,
                        })),
                        None => Err((loc, AsmErrorKind::BadNumber(text.into()))),
                    };
                }
                c if is_ident_start(char::from(c)) => {
                    let start = self.i;
                    while self.i < len && is_ident_char(char::from(self.bytes[self.i])) {
                        self.advance(1);
                    }
                    let text = &self.src[start..self.i];
                    let tok = if text == "." {
                        Tok::Dot
                    } else {
                        Tok::Ident(text.into())
                    };
                    return Ok(Some(Token { tok, loc }));
                }
                _ => {
                    let two = (c, self.at(self.i + 1));
                    let (tok, n) = match two {
                        (b'<', b'<') => (Tok::Shl, 2),
                        (b'>', b'>') => (Tok::Shr, 2),
                        (b'+', b'=') => (Tok::PlusEq, 2),
                        (b',', _) => (Tok::Comma, 1),
                        (b':', _) => (Tok::Colon, 1),
                        (b'(', _) => (Tok::LParen, 1),
                        (b')', _) => (Tok::RParen, 1),
                        (b'+', _) => (Tok::Plus, 1),
                        (b'-', _) => (Tok::Minus, 1),
                        (b'*', _) => (Tok::Star, 1),
                        (b'/', _) => (Tok::Slash, 1),
                        (b'%', _) => (Tok::Percent, 1),
                        (b'&', _) => (Tok::Amp, 1),
                        (b'|', _) => (Tok::Pipe, 1),
                        (b'^', _) => (Tok::Caret, 1),
                        (b'~', _) => (Tok::Tilde, 1),
                        (b'=', _) => (Tok::Equals, 1),
                        (b'@', _) => (Tok::At, 1),
                        _ => {
                            return Err((loc, AsmErrorKind::UnexpectedChar(self.char_at(self.i))));
                        }
                    };
                    self.advance(n);
                    return Ok(Some(Token { tok, loc }));
                }
            }
        }
        Ok(None)
    }

    /// Skips a `#` or `//` comment up to (not over) its newline.
    fn skip_line(&mut self) {
        while self.i < self.bytes.len() && self.bytes[self.i] != b'\n' {
            self.step_any();
        }
    }
}
