//! The provider conformance suite (`tests/fixtures/providers/*.json`, format in
//! its README): each case's input is decoded, converted to every target and
//! checked against its assertions and the expected outputs in
//! `tests/fixtures/providers/expected/`; converting back to the input's own
//! provider must give the input's bytes. `FORKPOINT_UPDATE_FIXTURES=1`
//! rewrites the expected outputs (review the diff).

use std::path::PathBuf;

use forkpoint_core::normalize::{self, J, Provider};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/providers")
}

fn semantic_eq(a: &J, b: &J) -> bool {
    normalize::canon::semantic_hash(std::slice::from_ref(a))
        == normalize::canon::semantic_hash(std::slice::from_ref(b))
}

/// Runs one case; returns the outputs by target and the failures.
fn run_case(case: &J) -> (J, Vec<String>) {
    let mut fails = Vec::new();
    let from = case.str_of("from").unwrap_or_default().to_string();
    let input = case.get("input").cloned().unwrap_or(J::Null);
    let options = case.get("options").map(J::text);
    let mut outputs = J::Obj(vec![]);
    // The input's exact compact text, for the JS suite (JSON.parse re-spells numbers).
    outputs.set("inputText", J::s(&input.text()));
    let canonical = if from == "canonical" {
        Ok(input.text())
    } else {
        normalize::from_provider(&input.text(), &from)
    };
    let canonical = match (canonical, case.get("error")) {
        (Err(e), Some(want)) => {
            if !want.is("code", e.code.as_str()) {
                fails.push(format!(
                    "error {} ({}), expected {}",
                    e.code.as_str(),
                    e.message,
                    want.text()
                ));
            }
            return (outputs, fails);
        }
        (Err(e), None) => {
            fails.push(format!("decode failed: {} {}", e.code.as_str(), e.message));
            return (outputs, fails);
        }
        (Ok(c), _) => c,
    };
    outputs.set("canonical", J::parse(&canonical).unwrap());
    let mut errored = None;
    for p in Provider::ALL {
        match normalize::to_provider(&canonical, p.name(), options.as_deref()) {
            Ok(out) => outputs.set(p.name(), J::parse(&out).unwrap()),
            Err(e) => {
                errored = Some(e.code.as_str().to_string());
                outputs.set(
                    p.name(),
                    J::obj([("error", J::obj([("code", J::s(e.code.as_str()))]))]),
                );
            }
        }
    }
    if let Some(want) = case.get("error") {
        if errored.as_deref() != want.str_of("code").as_deref() {
            fails.push(format!("expected error {}, got {errored:?}", want.text()));
        }
        return (outputs, fails);
    }
    // Byte stability: back to the provider the input came from.
    let byte_stable = case.get("byteStable").and_then(J::as_bool) != Some(false);
    if from != "canonical" && byte_stable {
        let back = outputs.get(&from).and_then(|o| o.get("request"));
        match back {
            Some(b) if b.text() == input.text() => {}
            Some(b) => fails.push(format!(
                "not byte-stable to {from}:\n  in : {}\n  out: {}",
                input.text(),
                b.text()
            )),
            None => fails.push(format!("no output for {from}")),
        }
        let steps = outputs
            .pointer(&format!("/{from}/report/steps"))
            .and_then(J::as_arr)
            .cloned()
            .unwrap_or_default();
        let lossy: Vec<String> = steps
            .iter()
            .filter(|s| s.get("lossy").and_then(J::as_bool) == Some(true))
            .map(|s| s.str_of("code").unwrap_or_default().to_string())
            .collect();
        if !lossy.is_empty() {
            fails.push(format!("lossy steps converting back to {from}: {lossy:?}"));
        }
    }
    for a in case
        .get("assert")
        .and_then(J::as_arr)
        .cloned()
        .unwrap_or_default()
    {
        let target = a.str_of("target").unwrap_or_default().to_string();
        let root = if let Some(via) = a.str_of("via") {
            round_trip(&outputs, &via, &target, case.get("options"))
        } else if target == "canonical" {
            outputs.get("canonical").cloned()
        } else {
            Provider::parse(&target)
                .ok()
                .and_then(|p| outputs.get(p.name()).cloned())
        };
        let Some(root) = root else {
            fails.push(format!("assert on unknown target {target}"));
            continue;
        };
        let what = a.text();
        if let Some(ptr) = a.str_of("pointer") {
            let got = root.pointer(&ptr);
            if let Some(want) = a.get("equals")
                && !got.is_some_and(|g| semantic_eq(g, want))
            {
                fails.push(format!(
                    "{what}: got {}",
                    got.map(J::text).unwrap_or("(absent)".into())
                ));
            }
            if let Some(J::Num(n)) = a.get("length") {
                let len = got.and_then(J::as_arr).map(|x| x.len());
                if len != n.parse().ok() {
                    fails.push(format!(
                        "{what}: got length {len:?} of {}",
                        got.map(J::text).unwrap_or("(absent)".into())
                    ));
                }
            }
            if a.get("absent").and_then(J::as_bool) == Some(true) && got.is_some() {
                fails.push(format!(
                    "{what}: present: {}",
                    got.map(J::text).unwrap_or_default()
                ));
            }
            if let Some(other) = a.str_of("sameAs") {
                let o = root.pointer(&other);
                if !(got.is_some() && o.is_some() && semantic_eq(got.unwrap(), o.unwrap())) {
                    fails.push(format!(
                        "{what}: {} vs {}",
                        got.map(J::text).unwrap_or("(absent)".into()),
                        o.map(J::text).unwrap_or("(absent)".into())
                    ));
                }
            }
            if let Some(other) = a.str_of("notSameAs") {
                let o = root.pointer(&other);
                if got.is_none() || o.is_none() || semantic_eq(got.unwrap(), o.unwrap()) {
                    fails.push(format!(
                        "{what}: {} vs {}",
                        got.map(J::text).unwrap_or("(absent)".into()),
                        o.map(J::text).unwrap_or("(absent)".into())
                    ));
                }
            }
            if let Some(re) = a.str_of("matches") {
                let re = regex::Regex::new(&re).expect("regex");
                if !got.and_then(J::as_str).is_some_and(|s| re.is_match(&s)) {
                    fails.push(format!(
                        "{what}: got {}",
                        got.map(J::text).unwrap_or("(absent)".into())
                    ));
                }
            }
        }
        let codes: Vec<String> = root
            .pointer("/report/steps")
            .and_then(J::as_arr)
            .map(|s| {
                s.iter()
                    .map(|x| x.str_of("code").unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default();
        if let Some(want) = a.get("steps").and_then(J::as_arr) {
            for w in want {
                let w = w.as_str().unwrap_or_default();
                if !codes.iter().any(|c| *c == w) {
                    fails.push(format!("{what}: step {w} missing from {codes:?}"));
                }
            }
        }
        if a.get("noSteps").and_then(J::as_bool) == Some(true) && !codes.is_empty() {
            fails.push(format!("{what}: steps {codes:?}"));
        }
    }
    (outputs, fails)
}

/// The way home: the request made for `via` read back (`fromProvider`) and
/// converted to `target` with the `idMap` that trip returned.
fn round_trip(outputs: &J, via: &str, target: &str, options: Option<&J>) -> Option<J> {
    let out = outputs.get(via)?;
    let back = normalize::from_provider(&out.get("request")?.text(), via).ok()?;
    let mut opts = options.cloned().unwrap_or(J::Obj(vec![]));
    opts.set("idMap", out.get("idMap")?.clone());
    let conv = normalize::to_provider(&back, target, Some(&opts.text())).ok()?;
    J::parse(&conv).ok()
}

/// The conformance cases, in name order.
fn case_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/fixtures/providers")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

#[test]
fn provider_conformance_suite() {
    let files = case_files();
    assert!(files.len() >= 40, "only {} cases", files.len());
    let update = std::env::var("FORKPOINT_UPDATE_FIXTURES").is_ok_and(|v| v == "1");
    let expected_dir = dir().join("expected");
    let mut failures = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(f).unwrap();
        let case = J::parse(&text).unwrap_or_else(|e| panic!("{name}: {}", e.message));
        let (outputs, fails) = run_case(&case);
        for fl in fails {
            failures.push(format!("{name}: {fl}"));
        }
        let exp_path = expected_dir.join(&name);
        if update {
            std::fs::create_dir_all(&expected_dir).unwrap();
            std::fs::write(&exp_path, outputs.pretty() + "\n").unwrap();
        } else {
            match std::fs::read_to_string(&exp_path) {
                Ok(t) => {
                    let want = J::parse(&t).unwrap();
                    for (k, v) in match &want {
                        J::Obj(m) => m.clone(),
                        _ => vec![],
                    } {
                        let got = outputs.get(&k).map(J::text).unwrap_or_default();
                        if got != v.text() {
                            failures.push(format!("{name}: {k} differs from expected/{name}:\n  want {}\n  got  {got}", v.text()));
                        }
                    }
                }
                Err(_) => failures.push(format!(
                    "{name}: no expected/{name} (run with FORKPOINT_UPDATE_FIXTURES=1 and review)"
                )),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The providers a step of a conversion comes from: the source provider of a
/// provider case; for a canonical case the origin (`api`) of the message the
/// step concerns, else every origin the case holds, else any provider.
fn step_sources(from: &str, canonical: &J, step: &J) -> Vec<Provider> {
    if from != "canonical" {
        return Provider::parse(from).into_iter().collect();
    }
    let msgs = canonical
        .get("messages")
        .and_then(J::as_arr)
        .cloned()
        .unwrap_or_default();
    let api = |m: &J| m.str_of("api").and_then(|a| Provider::parse(&a).ok());
    let at = step
        .get("message")
        .and_then(|n| n.text().parse::<usize>().ok())
        .and_then(|n| msgs.get(n))
        .and_then(api);
    if let Some(p) = at {
        return vec![p];
    }
    let mut all: Vec<Provider> = msgs.iter().filter_map(api).collect();
    all.dedup();
    if all.is_empty() {
        Provider::ALL.to_vec()
    } else {
        all
    }
}

/// `checkCompatibility(source, target)` lists every code (with its lossy flag)
/// that converting the conformance cases from `source` to `target` gives —
/// directly, and on the way home from every target — so the list cannot fall
/// behind the rules.
#[test]
fn check_compatibility_lists_every_step_the_cases_give() {
    let files = case_files();
    let listed = |s: Provider, t: Provider| -> Vec<(String, bool)> {
        normalize::check_compatibility(s.name(), t.name())
            .unwrap()
            .steps
            .into_iter()
            .map(|st| (st.code, st.lossy))
            .collect()
    };
    let mut missing = std::collections::BTreeSet::new();
    let mut seen = 0;
    let mut check = |from: &str, canonical: &J, target: Provider, out: &J, case: &str| {
        let steps = out
            .pointer("/report/steps")
            .and_then(J::as_arr)
            .cloned()
            .unwrap_or_default();
        for st in steps {
            let code = st.str_of("code").unwrap_or_default().to_string();
            let lossy = st.get("lossy").and_then(J::as_bool) == Some(true);
            for s in step_sources(from, canonical, &st) {
                seen += 1;
                if !listed(s, target).contains(&(code.clone(), lossy)) {
                    missing.insert(format!(
                        "{} → {}: {code} (lossy {lossy}), e.g. {case}",
                        s.name(),
                        target.name()
                    ));
                }
            }
        }
    };
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let case = J::parse(&std::fs::read_to_string(f).unwrap()).unwrap();
        if case.get("error").is_some() {
            continue;
        }
        let from = case.str_of("from").unwrap_or_default().to_string();
        let input = case.get("input").cloned().unwrap_or(J::Null);
        let options = case.get("options");
        let canonical = if from == "canonical" {
            input.text()
        } else {
            normalize::from_provider(&input.text(), &from).unwrap()
        };
        let canonical_j = J::parse(&canonical).unwrap();
        let mut outputs = J::Obj(vec![]);
        for t in Provider::ALL {
            let out = normalize::to_provider(&canonical, t.name(), options.map(J::text).as_deref())
                .unwrap_or_else(|e| panic!("{name} → {}: {}", t.name(), e.message));
            let out = J::parse(&out).unwrap();
            check(&from, &canonical_j, t, &out, &name);
            outputs.set(t.name(), out);
        }
        // The way home: each target's request read back and converted again.
        for via in Provider::ALL {
            let request = outputs.get(via.name()).and_then(|o| o.get("request"));
            let back = normalize::from_provider(&request.unwrap().text(), via.name()).unwrap();
            let back_j = J::parse(&back).unwrap();
            for t in Provider::ALL {
                if let Some(out) = round_trip(&outputs, via.name(), t.name(), options) {
                    check(
                        via.name(),
                        &back_j,
                        t,
                        &out,
                        &format!("{name} via {}", via.name()),
                    );
                }
            }
        }
    }
    assert!(seen > 100, "only {seen} steps seen");
    assert!(
        missing.is_empty(),
        "{} step(s) missing from checkCompatibility:\n{}",
        missing.len(),
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// `session.toProvider` parsing the context on several threads gives the
/// single thread's output byte for byte (the parts are joined in order; pi's
/// own messages, sent as user messages, fall on both sides of a cut).
#[test]
fn session_to_provider_on_threads_is_the_same() {
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
    );
    text.push('\n');
    let mut parent = String::from("null");
    for i in 0..5000 {
        let message = match i % 5 {
            0 => format!(r#"{{"role":"user","content":"q{i} é 😀","timestamp":1}}"#),
            1 => format!(
                r#"{{"role":"assistant","api":"anthropic-messages","provider":"anthropic","model":"m","stopReason":"toolUse","timestamp":1,"content":[{{"type":"thinking","thinking":"t{i}","thinkingSignature":"sig{i}"}},{{"type":"toolCall","id":"c{i}","name":"read","arguments":{{"n":{i}.50}}}}]}}"#
            ),
            2 => format!(
                r#"{{"role":"toolResult","toolCallId":"c{}","toolName":"read","content":[{{"type":"text","text":"r{i}\n"}}],"isError":false,"timestamp":1}}"#,
                i - 1
            ),
            3 => format!(
                r#"{{"role":"bashExecution","command":"ls {i}","output":"a\nb","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1}}"#
            ),
            _ => format!(
                r#"{{"role":"assistant","api":"openai-completions","provider":"openai","model":"g","stopReason":"stop","timestamp":1,"content":[{{"type":"text","text":"a{i}"}}]}}"#
            ),
        };
        text.push_str(&format!(
            r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{message}}}"#
        ));
        text.push('\n');
        parent = format!("\"e{i}\"");
    }
    let s = forkpoint_core::Session::from_bytes(text.into_bytes(), &Default::default(), None)
        .expect("session");
    for target in ["anthropic", "openai", "openai-responses", "google"] {
        let one = normalize::session_to_provider_lines(&s, None, target, None, 1).expect("one");
        for threads in [2, 3, 8] {
            let many = normalize::session_to_provider_lines(&s, None, target, None, threads)
                .expect("many");
            assert!(one == many, "{target} on {threads} threads differs");
        }
        assert!(
            one.contains("Ran `ls 3`"),
            "{target}: pi's bash execution is sent"
        );
    }
}
