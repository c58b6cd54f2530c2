//! A number's decimal digits written into a stack buffer, without `fmt`:
//! the wait descriptions made on every suspension (`"read fd 9"`,
//! `"delay 100 ms"`) must neither allocate nor pay the formatter.

/// Room for any `u128` (39 digits).
pub(crate) const DIGITS: usize = 39;

/// The decimal digits of `n`, written at the end of `buf`.
#[inline]
pub(crate) fn digits(n: u128, buf: &mut [u8; DIGITS]) -> &[u8] {
    // Almost every number here is a descriptor or a few milliseconds: a
    // 64-bit division is a few instructions, a 128-bit one a library call.
    if let Ok(small) = u64::try_from(n) {
        return digits_u64(small, buf);
    }
    let (mut n, mut at) = (n, DIGITS);
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[at..]
}

#[inline]
fn digits_u64(mut n: u64, buf: &mut [u8; DIGITS]) -> &[u8] {
    let mut at = DIGITS;
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[at..]
}

#[cfg(test)]
mod tests {
    #[test]
    fn digits_of_zero_small_and_the_largest() {
        let mut buf = [0; super::DIGITS];
        assert_eq!(super::digits(0, &mut buf), b"0");
        assert_eq!(super::digits(1234, &mut buf), b"1234");
        let max = u128::MAX.to_string();
        assert_eq!(super::digits(u128::MAX, &mut buf), max.as_bytes());
        let edge = u128::from(u64::MAX);
        assert_eq!(super::digits(edge, &mut buf), edge.to_string().as_bytes());
        assert_eq!(
            super::digits(edge + 1, &mut buf),
            (edge + 1).to_string().as_bytes()
        );
    }
}
