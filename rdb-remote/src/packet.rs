//! Framing of the GDB remote serial protocol: `$data#cs` packets, `%data#cs` notifications,
//! `+`/`-` acknowledgements, the `}` escape and run-length encoding, and hex.
//!
//! The stub may run-length encode any reply (`X*N` repeats `X` N - 29 more times) and escapes
//! `$`, `#`, `}` and `*` in binary data as `}` followed by the byte XOR 0x20. The checksum is
//! the sum modulo 256 of the bytes between `$` and `#` as sent (escaped and encoded). The
//! decoder takes bytes as they arrive and never trusts the peer: a frame larger than its limit,
//! a bad escape or run length is an error, never a panic.

/// Largest decoded packet accepted from a stub; a longer frame is malformed input.
pub const MAX_PACKET: usize = 1 << 20;

/// One unit read from the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// `+`: the peer received our packet.
    Ack,
    /// `-`: the peer asks for a retransmission.
    Nack,
    /// `$...#cs`, decoded.
    Packet(Vec<u8>),
    /// `%...#cs` (non-stop notifications), decoded.
    Notification(Vec<u8>),
    /// A frame whose checksum did not match (in acknowledgement mode, answered with `-`).
    BadChecksum,
}

/// A malformed frame from the peer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub String);

/// Sum of the bytes modulo 256.
pub fn checksum(data: &[u8]) -> u8 {
    data.iter().fold(0u8, |s, &b| s.wrapping_add(b))
}

/// `$data#cs` with `$`, `#`, `}` and `*` escaped (rdb never run-length encodes what it sends).
pub fn encode(data: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(data.len() + 4);
    for &b in data {
        if matches!(b, b'$' | b'#' | b'}' | b'*') {
            body.push(b'}');
            body.push(b ^ 0x20);
        } else {
            body.push(b);
        }
    }
    let mut out = Vec::with_capacity(body.len() + 4);
    out.push(b'$');
    out.extend_from_slice(&body);
    out.push(b'#');
    out.extend_from_slice(format!("{:02x}", checksum(&body)).as_bytes());
    out
}

/// The bytes of a frame body as sent, unescaped and run-length decoded.
pub fn decode_body(raw: &[u8]) -> Result<Vec<u8>, Malformed> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'}' => {
                let b = *raw.get(i + 1).ok_or_else(|| Malformed("escape `}` at the end of a packet".into()))?;
                out.push(b ^ 0x20);
                i += 2;
            }
            b'*' => {
                let n = *raw.get(i + 1).ok_or_else(|| Malformed("run length `*` at the end of a packet".into()))?;
                let last = *out.last().ok_or_else(|| Malformed("run length `*` with nothing to repeat".into()))?;
                let repeat = (n as usize)
                    .checked_sub(29)
                    .filter(|&r| r > 0 && n < 127)
                    .ok_or_else(|| Malformed(format!("run length character {n:#04x} out of range")))?;
                if out.len() + repeat > MAX_PACKET {
                    return Err(Malformed(format!("packet longer than {MAX_PACKET} bytes")));
                }
                out.resize(out.len() + repeat, last);
                i += 2;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Splits a byte stream into frames.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Appends bytes read from the connection.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete frame, if one is buffered. Bytes outside frames (line noise) are
    /// skipped.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, Malformed> {
        let start = self.buf.iter().position(|b| matches!(b, b'+' | b'-' | b'$' | b'%'));
        let Some(start) = start else {
            self.buf.clear();
            return Ok(None);
        };
        self.buf.drain(..start);
        match self.buf[0] {
            b'+' => {
                self.buf.drain(..1);
                return Ok(Some(Frame::Ack));
            }
            b'-' => {
                self.buf.drain(..1);
                return Ok(Some(Frame::Nack));
            }
            _ => {}
        }
        let Some(hash) = self.buf.iter().position(|&b| b == b'#') else {
            if self.buf.len() > 2 * MAX_PACKET {
                self.buf.clear();
                return Err(Malformed(format!("frame longer than {} bytes", 2 * MAX_PACKET)));
            }
            return Ok(None);
        };
        if self.buf.len() < hash + 3 {
            return Ok(None);
        }
        let notification = self.buf[0] == b'%';
        let frame: Vec<u8> = self.buf.drain(..hash + 3).collect();
        let raw = &frame[1..hash];
        let sent = std::str::from_utf8(&frame[hash + 1..]).ok().and_then(|s| u8::from_str_radix(s, 16).ok());
        if sent != Some(checksum(raw)) {
            return Ok(Some(Frame::BadChecksum));
        }
        let data = decode_body(raw)?;
        Ok(Some(if notification { Frame::Notification(data) } else { Frame::Packet(data) }))
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Bytes from hex text; `None` if the text is not hex or has an odd length.
pub fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks(2).map(|p| Some(nibble(p[0])? << 4 | nibble(p[1])?)).collect()
}

/// Register bytes from hex text in which the stub marks unavailable bytes `xx`: `None` for those.
pub fn unhex_registers(text: &[u8]) -> Option<Vec<Option<u8>>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks(2)
        .map(|p| match p {
            b"xx" | b"XX" => Some(None),
            _ => Some(Some(nibble(p[0])? << 4 | nibble(p[1])?)),
        })
        .collect()
}

/// A number in hex text (as the protocol writes addresses, lengths, signals, thread ids).
pub fn parse_hex(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 16 {
        return None;
    }
    text.iter().try_fold(0u64, |v, &c| Some(v << 4 | nibble(c)? as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(bytes: &[u8]) -> Vec<Frame> {
        let mut d = Decoder::new();
        d.feed(bytes);
        let mut out = Vec::new();
        while let Some(f) = d.next_frame().unwrap() {
            out.push(f);
        }
        out
    }

    #[test]
    fn encoding_escapes_the_four_special_bytes_and_checksums_what_is_sent() {
        assert_eq!(encode(b"g"), b"$g#67");
        assert_eq!(encode(b"qSupported"), b"$qSupported#37");
        let e = encode(b"a$b#c}d*e");
        assert_eq!(&e, b"$a}\x04b}\x03c}]d}\x0ae#51");
        assert_eq!(checksum(&e[1..e.len() - 3]), 0x51);
        // What we send decodes back to itself.
        assert_eq!(frames(&e), vec![Frame::Packet(b"a$b#c}d*e".to_vec())]);
    }

    #[test]
    fn run_length_encoding_repeats_the_previous_byte() {
        // "0* " = '0' then ' ' (32) - 29 = 3 more: "0000".
        assert_eq!(decode_body(b"0* ").unwrap(), b"0000");
        assert_eq!(decode_body(b"ab*\"c").unwrap(), b"abbbbbbc");
        // As gdbserver sends a register dump: 16 zero bytes.
        assert_eq!(decode_body(b"0*<").unwrap(), vec![b'0'; 32]);
        assert!(decode_body(b"*a").is_err(), "nothing to repeat");
        assert!(decode_body(b"a*").is_err(), "no count");
        assert!(decode_body(b"a*\x10").is_err(), "count below range");
        assert!(decode_body(b"a}").is_err(), "dangling escape");
    }

    #[test]
    fn the_decoder_splits_acks_packets_and_notifications_arriving_in_pieces() {
        let mut d = Decoder::new();
        d.feed(b"+$O");
        assert_eq!(d.next_frame().unwrap(), Some(Frame::Ack));
        assert_eq!(d.next_frame().unwrap(), None);
        d.feed(b"K#9");
        assert_eq!(d.next_frame().unwrap(), None, "checksum incomplete");
        d.feed(b"a%Stop:T05#99noise-");
        assert_eq!(d.next_frame().unwrap(), Some(Frame::Packet(b"OK".to_vec())));
        assert_eq!(d.next_frame().unwrap(), Some(Frame::Notification(b"Stop:T05".to_vec())));
        assert_eq!(d.next_frame().unwrap(), Some(Frame::Nack));
        assert_eq!(d.next_frame().unwrap(), None);
    }

    #[test]
    fn a_wrong_checksum_is_reported_and_the_stream_goes_on() {
        assert_eq!(frames(b"$OK#00$OK#9a"), vec![Frame::BadChecksum, Frame::Packet(b"OK".to_vec())]);
        assert_eq!(frames(b"$OK#zz"), vec![Frame::BadChecksum]);
    }

    #[test]
    fn hostile_frames_are_errors_not_panics() {
        let mut d = Decoder::new();
        // A run length that would blow the packet up past the limit.
        let mut raw = b"a".to_vec();
        for _ in 0..(MAX_PACKET / 97 + 2) {
            raw.extend_from_slice(b"*~");
        }
        let mut frame = vec![b'$'];
        frame.extend_from_slice(&raw);
        frame.extend_from_slice(format!("#{:02x}", checksum(&raw)).as_bytes());
        d.feed(&frame);
        assert!(d.next_frame().is_err());
        // A frame that never ends.
        let mut d = Decoder::new();
        d.feed(b"$");
        d.feed(&vec![b'a'; 2 * MAX_PACKET + 1]);
        assert!(d.next_frame().is_err());
    }

    #[test]
    fn hex_helpers_round_trip_and_refuse_garbage() {
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
        assert_eq!(unhex(b"00AB10").unwrap(), vec![0, 0xab, 0x10]);
        assert_eq!(unhex(b"0"), None);
        assert_eq!(unhex(b"0g"), None);
        assert_eq!(unhex_registers(b"01xx02").unwrap(), vec![Some(1), None, Some(2)]);
        assert_eq!(parse_hex(b"555555554000"), Some(0x5555_5555_4000));
        assert_eq!(parse_hex(b""), None);
        assert_eq!(parse_hex(b"12345678901234567"), None);
        assert_eq!(parse_hex(b"-1"), None);
    }
}
