//! The span scanner accepts exactly what serde_json accepts (within serde_json's
//! nesting limit), and never panics.
#![no_main]

use forkpoint_core::json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let ours = json::validate(data, 100);
    let Ok(text) = std::str::from_utf8(data) else { return };
    // serde_json checks lone surrogates only when it builds strings; `IgnoredAny`
    // does not, like us (and JSON.parse).
    let theirs = serde_json::from_str::<serde::de::IgnoredAny>(text);
    let deep = data.iter().filter(|&&c| c == b'[' || c == b'{').count() > 100;
    if !deep {
        assert_eq!(ours.is_ok(), theirs.is_ok(), "{text:?}: ours {ours:?} serde {theirs:?}");
    }
    if let Ok(v) = ours {
        let _ = v.str(text);
        let _ = v.truthy(text);
        let _ = json::decode_escaped(v.inner(text));
    }
    let _ = forkpoint_core::entry::parse_envelope(text, 100);
    let _ = forkpoint_core::time::iso_to_ms(text);
});
