//! The Thrift compact protocol, read into a plain tree: enough to read a
//! Parquet footer (`FileMetaData`, apache/parquet-format's
//! `parquet.thrift`) without a Thrift or Parquet library. Bounded: nesting
//! deeper than [`MAX_DEPTH`] or a list longer than the bytes left is an
//! error, never a panic or an allocation the input chose.

/// Deepest nesting of structs and lists read (a footer needs about 8).
const MAX_DEPTH: usize = 32;

/// One value of the compact protocol.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum T {
    Bool(bool),
    /// i8, i16, i32 and i64 alike.
    Int(i64),
    Double(f64),
    /// `binary` and `string`.
    Bin(Vec<u8>),
    /// `list` and `set`.
    List(Vec<T>),
    /// A struct or union: its fields by id, in the order read.
    Struct(Vec<(i16, T)>),
    Map(Vec<(T, T)>),
}

impl T {
    /// Field `id` of a struct.
    pub(crate) fn get(&self, id: i16) -> Option<&T> {
        match self {
            T::Struct(fields) => fields.iter().find(|(i, _)| *i == id).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(crate) fn int(&self, id: i16) -> Option<i64> {
        match self.get(id)? {
            T::Int(n) => Some(*n),
            _ => None,
        }
    }

    pub(crate) fn bool(&self, id: i16) -> Option<bool> {
        match self.get(id)? {
            T::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub(crate) fn bin(&self, id: i16) -> Option<&[u8]> {
        match self.get(id)? {
            T::Bin(b) => Some(b),
            _ => None,
        }
    }

    pub(crate) fn text(&self, id: i16) -> Option<String> {
        self.bin(id)
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    pub(crate) fn list(&self, id: i16) -> &[T] {
        match self.get(id) {
            Some(T::List(l)) => l,
            _ => &[],
        }
    }
}

/// Reads one struct from the start of `bytes`.
pub(crate) fn read_struct(bytes: &[u8]) -> Result<T, String> {
    let mut r = Reader { bytes, pos: 0 };
    r.value(12, 0)
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or("the footer ends inside a value")?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut n = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift < 64 {
                n |= u64::from(b & 0x7f) << shift;
            }
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err("a varint longer than 10 bytes".into())
    }

    fn zigzag(&mut self) -> Result<i64, String> {
        let n = self.varint()?;
        Ok((n >> 1) as i64 ^ -((n & 1) as i64))
    }

    /// A count of elements, each at least one byte: never more than the
    /// bytes left.
    fn count(&mut self, n: u64) -> Result<usize, String> {
        let left = (self.bytes.len() - self.pos) as u64;
        if n > left {
            return Err(format!("a list of {n} elements in {left} bytes"));
        }
        Ok(n as usize)
    }

    fn value(&mut self, kind: u8, depth: usize) -> Result<T, String> {
        if depth > MAX_DEPTH {
            return Err("values nested too deep".into());
        }
        Ok(match kind {
            1 => T::Bool(true),
            2 => T::Bool(false),
            3 => T::Int(i64::from(self.byte()? as i8)),
            4..=6 => T::Int(self.zigzag()?),
            7 => {
                let end = self.pos + 8;
                let b = self
                    .bytes
                    .get(self.pos..end)
                    .ok_or("the footer ends inside a double")?;
                self.pos = end;
                T::Double(f64::from_le_bytes(b.try_into().unwrap_or_default()))
            }
            8 => {
                let n = self.varint()?;
                let n = self.count(n)?;
                let b = self.bytes[self.pos..self.pos + n].to_vec();
                self.pos += n;
                T::Bin(b)
            }
            9 | 10 => self.list(depth)?,
            11 => self.map(depth)?,
            12 => self.fields(depth)?,
            k => return Err(format!("unknown compact type {k}")),
        })
    }

    fn list(&mut self, depth: usize) -> Result<T, String> {
        let head = self.byte()?;
        let n = match head >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        let n = self.count(n)?;
        let kind = head & 0x0f;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(if matches!(kind, 1 | 2) {
                // A bool element is one byte: 1 is true.
                T::Bool(self.byte()? == 1)
            } else {
                self.value(kind, depth + 1)?
            });
        }
        Ok(T::List(items))
    }

    fn map(&mut self, depth: usize) -> Result<T, String> {
        let n = self.varint()?;
        let n = self.count(n)?;
        if n == 0 {
            return Ok(T::Map(Vec::new()));
        }
        let kinds = self.byte()?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            let k = self.value(kinds >> 4, depth + 1)?;
            let v = self.value(kinds & 0x0f, depth + 1)?;
            items.push((k, v));
        }
        Ok(T::Map(items))
    }

    fn fields(&mut self, depth: usize) -> Result<T, String> {
        let mut fields = Vec::new();
        let mut last: i16 = 0;
        loop {
            let head = self.byte()?;
            if head == 0 {
                return Ok(T::Struct(fields));
            }
            let id = match head >> 4 {
                0 => self.zigzag()? as i16,
                delta => last.wrapping_add(i16::from(delta)),
            };
            last = id;
            fields.push((id, self.value(head & 0x0f, depth + 1)?));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_lists_and_numbers_are_read_and_bad_input_is_an_error() {
        // {1: i32 -3, 2: "ab", 3: [true, false], 5: {1: i64 300}, 20: true}
        let bytes = [
            0x15, 0x05, 0x18, 0x02, b'a', b'b', 0x19, 0x21, 0x01, 0x02, 0x2c, 0x16, 0xd8, 0x04,
            0x00, 0x01, 0x28, 0x00,
        ];
        let t = read_struct(&bytes).unwrap();
        assert_eq!(t.int(1), Some(-3));
        assert_eq!(t.text(2).as_deref(), Some("ab"));
        assert_eq!(t.list(3), [T::Bool(true), T::Bool(false)]);
        assert_eq!(t.get(5).unwrap().int(1), Some(300));
        assert_eq!(t.bool(20), Some(true));
        // Cut short, a list longer than the input, nesting without end.
        assert!(read_struct(&bytes[..5]).is_err());
        assert!(read_struct(&[0x19, 0xf8, 0xff, 0xff, 0xff, 0x0f]).is_err());
        assert!(read_struct(&[0x1c; 200]).is_err());
    }
}
