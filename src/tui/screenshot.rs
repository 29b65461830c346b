//! Screenshots from the real renderer: a ratatui buffer as an SVG with the theme's colours.
//! `cargo test --test tui screenshots` writes `screenshots/<view>.svg` when
//! `LEASEHOLD_SCREENSHOTS=1` is set.

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

use super::theme::{Role, Theme};

const CELL_W: f32 = 8.4;
const CELL_H: f32 = 18.0;
const FONT: f32 = 14.0;

fn ansi(c: Color) -> Option<(u8, u8, u8)> {
    Some(match c {
        Color::Black => (0x1e, 0x1e, 0x1e),
        Color::Red => (0xcd, 0x31, 0x31),
        Color::Green => (0x0d, 0xbc, 0x79),
        Color::Yellow => (0xe5, 0xe5, 0x10),
        Color::Blue => (0x24, 0x72, 0xc8),
        Color::Magenta => (0xbc, 0x3f, 0xbc),
        Color::Cyan => (0x11, 0xa8, 0xcd),
        Color::Gray => (0xcc, 0xcc, 0xcc),
        Color::DarkGray => (0x66, 0x66, 0x66),
        Color::LightRed => (0xf1, 0x4c, 0x4c),
        Color::LightGreen => (0x23, 0xd1, 0x8b),
        Color::LightYellow => (0xf5, 0xf5, 0x43),
        Color::LightBlue => (0x3b, 0x8e, 0xea),
        Color::LightMagenta => (0xd6, 0x70, 0xd6),
        Color::LightCyan => (0x29, 0xb8, 0xdb),
        Color::White => (0xf2, 0xf2, 0xf2),
        Color::Rgb(r, g, b) => (r, g, b),
        Color::Indexed(i) => indexed(i),
        Color::Reset => return None,
    })
}

fn indexed(i: u8) -> (u8, u8, u8) {
    match i {
        0..=15 => {
            let named = [
                Color::Black,
                Color::Red,
                Color::Green,
                Color::Yellow,
                Color::Blue,
                Color::Magenta,
                Color::Cyan,
                Color::Gray,
                Color::DarkGray,
                Color::LightRed,
                Color::LightGreen,
                Color::LightYellow,
                Color::LightBlue,
                Color::LightMagenta,
                Color::LightCyan,
                Color::White,
            ];
            ansi(named[usize::from(i)]).unwrap_or((0, 0, 0))
        }
        16..=231 => {
            let n = i - 16;
            let level = |v: u8| if v == 0 { 0 } else { 55 + v * 40 };
            (level(n / 36), level((n / 6) % 6), level(n % 6))
        }
        _ => {
            let v = 8 + (i - 232) * 10;
            (v, v, v)
        }
    }
}

fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

fn escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".into(),
            '<' => "&lt;".into(),
            '>' => "&gt;".into(),
            '"' => "&quot;".into(),
            c if c.is_control() => " ".into(),
            c => c.to_string(),
        })
        .collect()
}

/// The buffer as a standalone SVG, colours resolved through `theme` (its base role gives
/// the default foreground and background).
#[must_use]
pub fn to_svg(buffer: &Buffer, theme: &Theme) -> String {
    let base = theme.style(Role::Base);
    let default_fg = base.fg.and_then(ansi).unwrap_or((0xdd, 0xdd, 0xdd));
    let default_bg = base.bg.and_then(ansi).unwrap_or((0x10, 0x10, 0x10));
    let area = buffer.area;
    let width = f32::from(area.width) * CELL_W;
    let height = f32::from(area.height) * CELL_H;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.1} {height:.1}\" font-family=\"'DejaVu Sans Mono', 'Menlo', 'Consolas', monospace\" font-size=\"{FONT}\">\n<rect width=\"100%\" height=\"100%\" fill=\"{}\"/>\n",
        hex(default_bg)
    );
    for y in area.top()..area.bottom() {
        let mut x = area.left();
        while x < area.right() {
            let Some(cell) = buffer.cell((x, y)) else {
                break;
            };
            let style = cell.style();
            let key = (style.fg, style.bg, style.add_modifier);
            let start = x;
            let mut text = String::new();
            while x < area.right() {
                let Some(c) = buffer.cell((x, y)) else { break };
                let s = c.style();
                if (s.fg, s.bg, s.add_modifier) != key {
                    break;
                }
                text.push_str(if c.symbol().is_empty() {
                    ""
                } else {
                    c.symbol()
                });
                x += 1;
            }
            let mut fg = style.fg.and_then(ansi).unwrap_or(default_fg);
            let mut bg = style.bg.and_then(ansi);
            let modifier = style.add_modifier;
            if modifier.contains(Modifier::REVERSED) {
                let old_fg = fg;
                fg = bg.unwrap_or(default_bg);
                bg = Some(old_fg);
            }
            let px = f32::from(start - area.left()) * CELL_W;
            let py = f32::from(y - area.top()) * CELL_H;
            let run = f32::from(x - start) * CELL_W;
            if let Some(bg) = bg.filter(|b| *b != default_bg) {
                out.push_str(&format!("<rect x=\"{px:.1}\" y=\"{py:.1}\" width=\"{run:.1}\" height=\"{CELL_H}\" fill=\"{}\"/>\n", hex(bg)));
            }
            if text.trim().is_empty() {
                continue;
            }
            let mut attrs = String::new();
            if modifier.contains(Modifier::BOLD) {
                attrs.push_str(" font-weight=\"bold\"");
            }
            if modifier.contains(Modifier::ITALIC) {
                attrs.push_str(" font-style=\"italic\"");
            }
            if modifier.contains(Modifier::UNDERLINED) {
                attrs.push_str(" text-decoration=\"underline\"");
            }
            if modifier.contains(Modifier::DIM) {
                attrs.push_str(" opacity=\"0.6\"");
            }
            let len = run;
            out.push_str(&format!(
                "<text x=\"{px:.1}\" y=\"{:.1}\" fill=\"{}\" textLength=\"{len:.1}\" lengthAdjust=\"spacingAndGlyphs\" xml:space=\"preserve\"{attrs}>{}</text>\n",
                py + CELL_H * 0.75,
                hex(fg),
                escape(&text)
            ));
        }
    }
    out.push_str("</svg>\n");
    out
}
