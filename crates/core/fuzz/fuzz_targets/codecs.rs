//! The provider codecs on arbitrary input: never panic; whatever decodes
//! converts to every target as valid JSON that decodes again; and a conversion
//! back to the input's own provider that reports no step gives the input's bytes.
#![no_main]

use forkpoint_core::normalize::{self, J, Provider};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let p = Provider::ALL[(sel % 4) as usize];
    let _ = normalize::normalize_message(text, p.name());
    let _ = normalize::denormalize_message(text, p.name(), None);
    let Ok(canon) = normalize::from_provider(text, p.name()) else { return };
    let input = J::parse(text).expect("decoded input is JSON").text();
    for t in Provider::ALL {
        let model = if sel & 0x80 != 0 { Some("{\"model\":\"gemini-3-pro\"}") } else { None };
        let out = normalize::to_provider(&canon, t.name(), model)
            .unwrap_or_else(|e| panic!("{} → {}: {}", p.name(), t.name(), e.message));
        let out = J::parse(&out).expect("output is JSON");
        let req = out.get("request").expect("request").text();
        assert!(!req.contains('\n'));
        let again = normalize::from_provider(&req, t.name())
            .unwrap_or_else(|e| panic!("{} output does not decode: {} ({req})", t.name(), e.message));
        let _ = normalize::to_provider(&again, p.name(), None).expect("second conversion");
        let steps = out.pointer("/report/steps").and_then(J::as_arr).map(|s| s.len()).unwrap_or(0);
        if t == p && steps == 0 && model.is_none() {
            // Only the keys the codecs handle take part in the request.
            let keys: &[&str] = match p {
                Provider::Anthropic => &["system", "messages"],
                Provider::OpenAi => &["messages"],
                Provider::Responses => &["instructions", "input"],
                Provider::Google => &["systemInstruction", "contents"],
            };
            let parsed = J::parse(text).unwrap();
            let plain = match &parsed {
                J::Obj(m) => m.iter().all(|(k, _)| keys.contains(&&**k)) && m.len() == m.iter().map(|(k, _)| &**k).collect::<std::collections::HashSet<&str>>().len(),
                _ => false,
            };
            let ordered = matches!(&parsed, J::Obj(m) if m.iter().map(|(k, _)| &**k).collect::<Vec<&str>>() == keys.iter().copied().filter(|k| m.iter().any(|(x, _)| &**x == *k)).collect::<Vec<_>>());
            if plain && ordered && !(p == Provider::Responses && parsed.get("instructions") == Some(&J::Null)) {
                assert_eq!(req, input, "{} not byte-stable", p.name());
            }
        }
    }
});
