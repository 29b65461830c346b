//! Closed vocabularies stored as text: one macro gives each its `as_str` / `parse`, the
//! JSON form (the same text), and comparison with that text.
//!
//! A stored value this build does not know is never dropped or defaulted: providers read
//! it through `parse` and report the column as unreadable, and code that holds the text
//! itself uses `from_stored`, which answers `STORE_CORRUPT` naming the value.

/// Declares a closed vocabulary: `vocabulary! { /// doc  pub enum Name("what it is") {
/// Variant = "text", … } }`.
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident($what:literal) {
            $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The stored (and printed) text.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }

            /// Reads [`Self::as_str`] back; `None` for any other text.
            #[must_use]
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }

            /// Reads a stored value back.
            ///
            /// # Errors
            /// `STORE_CORRUPT` naming the value when this build does not know it.
            pub fn from_stored(text: &str) -> $crate::error::Result<Self> {
                Self::parse(text).ok_or_else(|| {
                    $crate::error::Error::Corrupt(format!(
                        concat!("unknown ", $what, " {:?}"),
                        text
                    ))
                })
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Self::parse(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!(concat!("unknown ", $what, " {:?}"), text))
                })
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                self == other.as_str()
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.as_str()
            }
        }
    };
}

pub(crate) use vocabulary;

#[cfg(test)]
mod tests {
    vocabulary! {
        /// A test vocabulary.
        enum Colour("colour") {
            Red = "red",
            DarkBlue = "dark-blue",
        }
    }

    #[test]
    fn text_round_trips_and_unknown_text_is_named() {
        for c in Colour::ALL {
            assert_eq!(Colour::parse(c.as_str()), Some(*c));
            let json = serde_json::to_string(c).expect("serialises");
            assert_eq!(json, format!("\"{c}\""));
            assert_eq!(serde_json::from_str::<Colour>(&json).expect("reads"), *c);
        }
        assert_eq!(Colour::DarkBlue, "dark-blue");
        assert_eq!("dark-blue", Colour::DarkBlue);
        assert_eq!(String::from("red"), Colour::Red);
        assert_eq!(Colour::parse("green"), None);
        let err = Colour::from_stored("green").expect_err("unknown");
        assert_eq!(err.code(), "STORE_CORRUPT");
        assert!(
            err.to_string().contains("unknown colour \"green\""),
            "{err}"
        );
        let err = serde_json::from_str::<Colour>("\"green\"").expect_err("unknown");
        assert!(
            err.to_string().contains("unknown colour \"green\""),
            "{err}"
        );
    }
}
