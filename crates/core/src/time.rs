//! ISO-8601 timestamps as JavaScript's `Date` reads and writes them.

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn digits(&mut self, n: usize) -> Option<i64> {
        let mut v = 0i64;
        for _ in 0..n {
            let c = *self.b.get(self.i)?;
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(c - b'0');
            self.i += 1;
        }
        Some(v)
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn done(&self) -> bool {
        self.i == self.b.len()
    }
}

/// Milliseconds since the Unix epoch for an ISO-8601 date-time string, as
/// `new Date(s).getTime()` gives for the forms `toISOString()` writes
/// (`2026-02-02T04:27:23.179Z`), date-only forms, offsets (`+02:00`) and
/// extended years. A date-time without an offset is read as UTC (JavaScript
/// would use the local zone). Returns `None` where `Date` gives `NaN`.
pub fn iso_to_ms(s: &str) -> Option<i64> {
    let mut c = Cursor {
        b: s.trim().as_bytes(),
        i: 0,
    };
    let year = match c.b.first()? {
        b'+' | b'-' => {
            let neg = c.b[0] == b'-';
            c.i = 1;
            let y = c.digits(6)?;
            if neg && y == 0 {
                return None;
            }
            if neg { -y } else { y }
        }
        _ => c.digits(4)?,
    };
    let (mut month, mut day) = (1, 1);
    if c.eat(b'-') {
        month = c.digits(2)?;
        if c.eat(b'-') {
            day = c.digits(2)?;
        }
    }
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let (mut h, mut mi, mut sec, mut ms) = (0, 0, 0, 0);
    let mut offset_min = 0i64;
    if c.eat(b'T') || c.eat(b't') {
        h = c.digits(2)?;
        if !c.eat(b':') {
            return None;
        }
        mi = c.digits(2)?;
        if c.eat(b':') {
            sec = c.digits(2)?;
            if c.eat(b'.') || c.eat(b',') {
                let start = c.i;
                let mut frac = 0i64;
                while let Some(&d) = c.b.get(c.i) {
                    if !d.is_ascii_digit() {
                        break;
                    }
                    if c.i - start < 3 {
                        frac = frac * 10 + i64::from(d - b'0');
                    }
                    c.i += 1;
                }
                let n = c.i - start;
                if n == 0 {
                    return None;
                }
                for _ in n..3 {
                    frac *= 10;
                }
                ms = frac;
            }
        }
        if h > 24 || mi > 59 || sec > 59 || (h == 24 && (mi, sec, ms) != (0, 0, 0)) {
            return None;
        }
        if c.eat(b'Z') || c.eat(b'z') {
        } else if let Some(&sign) = c.b.get(c.i) {
            if sign != b'+' && sign != b'-' {
                return None;
            }
            c.i += 1;
            let oh = c.digits(2)?;
            c.eat(b':');
            let om = c.digits(2)?;
            if oh > 23 || om > 59 {
                return None;
            }
            offset_min = (oh * 60 + om) * if sign == b'-' { -1 } else { 1 };
        }
    }
    if !c.done() {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let t = days * 86_400_000 + h * 3_600_000 + mi * 60_000 + sec * 1000 + ms - offset_min * 60_000;
    if t.abs() > 8_640_000_000_000_000 {
        None
    } else {
        Some(t)
    }
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Formats milliseconds since the epoch as `Date.prototype.toISOString()` does.
pub fn ms_to_iso(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    if (0..=9999).contains(&y) {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
    } else {
        let sign = if y < 0 { '-' } else { '+' };
        format!(
            "{sign}{:06}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z",
            y.abs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_date() {
        assert_eq!(iso_to_ms("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            iso_to_ms("2026-02-02T04:27:23.179Z"),
            Some(1_770_006_443_179)
        );
        assert_eq!(iso_to_ms("2026-02-02"), Some(1_769_990_400_000));
        assert_eq!(
            iso_to_ms("2026-02-02T04:27:23.1799Z"),
            Some(1_770_006_443_179)
        );
        assert_eq!(
            iso_to_ms("2026-02-02T06:27:23.179+02:00"),
            Some(1_770_006_443_179)
        );
        assert_eq!(iso_to_ms("2024-02-29T00:00Z"), Some(1_709_164_800_000));
        assert_eq!(iso_to_ms("2023-02-29"), None);
        assert_eq!(iso_to_ms("yesterday"), None);
        assert_eq!(iso_to_ms(""), None);
        assert_eq!(iso_to_ms("-000000-01-01"), None);
        assert_eq!(
            iso_to_ms("+275760-09-13T00:00:00.000Z"),
            Some(8_640_000_000_000_000)
        );
    }

    #[test]
    fn formats_like_to_iso_string() {
        for ms in [
            0i64,
            1_770_006_443_179,
            -1,
            951_782_400_000,
            253_402_300_799_999,
        ] {
            assert_eq!(iso_to_ms(&ms_to_iso(ms)), Some(ms), "{ms}");
        }
        assert_eq!(ms_to_iso(1_770_006_443_179), "2026-02-02T04:27:23.179Z");
        assert_eq!(ms_to_iso(-1), "1969-12-31T23:59:59.999Z");
    }
}
