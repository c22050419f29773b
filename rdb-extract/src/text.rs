//! Byte offsets, lines and columns of one source text, and text edits.

use proc_macro2::LineColumn;
use std::ops::Range;

/// Maps between byte offsets and (1-based line, 0-based character column)
/// positions of one text, the coordinates proc-macro2 spans use.
pub(crate) struct LineIndex<'a> {
    text: &'a str,
    /// Byte offset of the start of each line.
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }

    /// Byte offset of a span position.
    pub(crate) fn offset(&self, lc: LineColumn) -> usize {
        let Some(&start) = self.starts.get(lc.line.saturating_sub(1)) else {
            return self.text.len();
        };
        let line = &self.text[start..];
        match line.char_indices().nth(lc.column) {
            Some((i, _)) => start + i,
            None => self.text.len(),
        }
    }

    /// 1-based line and 1-based character column of a byte offset.
    pub(crate) fn line_col(&self, offset: usize) -> (u32, u32) {
        let line = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let col = self.text[self.starts[line]..offset].chars().count();
        (line as u32 + 1, col as u32 + 1)
    }
}

/// Widens the byte range of removed code so that removing it leaves the text
/// the user had before adding it: a range alone on its lines takes the whole
/// lines with it (indentation and line break; `true` is returned); a range
/// sharing a line with other code takes the blanks that separated it from
/// that code.
pub(crate) fn removal_range(text: &str, r: Range<usize>) -> (Range<usize>, bool) {
    let bytes = text.as_bytes();
    let line_start = text[..r.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[r.end..].find('\n').map_or(text.len(), |i| r.end + i);
    let before_blank = is_blank(&text[line_start..r.start]);
    let after_blank = is_blank(&text[r.end..line_end]);
    if before_blank && after_blank {
        let end = if line_end < text.len() { line_end + 1 } else { line_end };
        return (line_start..end, true);
    }
    if after_blank {
        // `code; REGION` -> `code;`
        let mut start = r.start;
        while start > line_start && matches!(bytes[start - 1], b' ' | b'\t') {
            start -= 1;
        }
        return (start..r.end, false);
    }
    // `REGION code` or `code REGION code` -> drop the blanks after it.
    let mut end = r.end;
    while end < line_end && matches!(bytes[end], b' ' | b'\t') {
        end += 1;
    }
    (r.start..end, false)
}

fn is_blank(s: &str) -> bool {
    s.chars().all(|c| c == ' ' || c == '\t' || c == '\r')
}

/// Merges widened removals. Whole-line removals separated only by blank
/// lines form one group (the blank lines go too); a group set off by blank
/// lines on both sides was added with one of them, so it takes the blank
/// line after it as well.
pub(crate) fn merge_removals(text: &str, mut ranges: Vec<(Range<usize>, bool)>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
    let mut merged: Vec<(Range<usize>, bool)> = Vec::new();
    for (r, whole) in ranges {
        match merged.last_mut() {
            Some((last, _)) if r.start < last.end => last.end = last.end.max(r.end),
            Some((last, true)) if whole && text[last.end..r.start].chars().all(|c| c.is_whitespace()) => {
                last.end = r.end
            }
            _ => merged.push((r, whole)),
        }
    }
    merged
        .into_iter()
        .map(|(mut r, whole)| {
            if whole && r.end < text.len() {
                // The start of the file counts as a blank line before.
                let prev_blank = r.start == 0 || {
                    let prev_start = text[..r.start - 1].rfind('\n').map_or(0, |i| i + 1);
                    is_blank(&text[prev_start..r.start - 1])
                };
                if let Some(next_end) = text[r.end..].find('\n').map(|i| r.end + i) {
                    if prev_blank && is_blank(&text[r.end..next_end]) {
                        r.end = next_end + 1;
                    }
                }
            }
            r
        })
        .collect()
}

/// A replacement of `range` (byte offsets in the original text) by `with`.
#[derive(Debug, Clone)]
pub(crate) struct Edit {
    pub(crate) range: Range<usize>,
    pub(crate) with: String,
}

/// Applies non-overlapping edits. Edits nested inside an earlier, larger edit
/// are dropped (the larger one wins).
pub(crate) fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by(|a, b| a.range.start.cmp(&b.range.start).then(b.range.end.cmp(&a.range.end)));
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for e in edits {
        if e.range.start < pos {
            continue;
        }
        out.push_str(&text[pos..e.range.start]);
        out.push_str(&e.with);
        pos = e.range.end;
    }
    out.push_str(&text[pos..]);
    out
}

/// Maps an offset of the original text to the edited text (offsets inside a
/// removed range map to its start).
pub(crate) fn map_offset(edits: &[Edit], offset: usize) -> usize {
    let mut delta: isize = 0;
    for e in edits {
        if e.range.end <= offset {
            delta += e.with.len() as isize - e.range.len() as isize;
        } else if e.range.start < offset {
            return (e.range.start as isize + delta) as usize;
        }
    }
    (offset as isize + delta) as usize
}

/// The line breaks of `s`, so that replacing `s` by them keeps line numbers.
pub(crate) fn newlines_of(s: &str) -> String {
    "\n".repeat(s.matches('\n').count())
}
