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
    let env = forkpoint_core::entry::parse_envelope(text, 100);
    let _ = forkpoint_core::time::iso_to_ms(text);
    // The lazy loader's skim: never panics, and on a valid object it finds the
    // same top-level type, id and parentId as the parser (last duplicate wins).
    let skim = json::skim_entry(data);
    if let (Some(sk), Ok(env), true) = (skim, env, ours.is_ok()) {
        let plain = |v: Option<json::Value>| v.filter(|v| v.kind == json::Kind::String).map(|v| v.inner(text).as_bytes().to_vec());
        if let Some(t) = sk.ty {
            assert_eq!(Some(t.to_vec()), plain(env.ty), "type of {text:?}");
        }
        if let Some(i) = sk.id {
            assert_eq!(Some(i.to_vec()), plain(env.id), "id of {text:?}");
        }
        match sk.parent {
            Some(Some(p)) => assert_eq!(Some(p.to_vec()), plain(env.parent_id), "parentId of {text:?}"),
            Some(None) => assert!(env.parent_id.is_some_and(|v| v.kind == json::Kind::Null), "null parentId of {text:?}"),
            None => assert!(env.parent_id.is_none(), "parentId of {text:?}"),
        }
    }
    // Id keys: ids that decode alike without lone surrogates keep their text.
    if let Ok(v) = ours
        && v.kind == json::Kind::String
    {
        let key = json::id_key(v.inner(text));
        if !key.starts_with('\0') {
            assert_eq!(key, json::decode_escaped(v.inner(text)));
        }
        let lit = json::id_literal(&key);
        assert_eq!(json::id_key(&lit[1..lit.len() - 1]), key, "{text:?}");
    }
});
