//! The compatibility report: every change a conversion made, lossy or not.

use serde::Serialize;

/// One change a conversion made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ConversionStep {
    /// Stable code, one of the 45 listed in FORMAT.md §15.5 (`thinking_to_text`,
    /// `signature_dropped`, `tool_call_id_mapped`, `missing_tool_result_filled`,
    /// `orphan_tool_result_dropped`, `tool_result_image_moved`, …).
    pub code: String,
    /// Index of the canonical message it concerns (in the input to the conversion).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub message: Option<usize>,
    /// What happened, for people.
    pub detail: String,
    /// Whether information was lost (and not only reshaped).
    pub lossy: bool,
}

/// What a conversion could not carry over, and every step it took.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CompatibilityReport {
    /// `true` when nothing was lost (reshaping such as id mapping is not a loss).
    pub compatible: bool,
    /// One line per kind of problem, for people.
    pub warnings: Vec<String>,
    /// Canonical fields whose content was lost or changed (`thinking`,
    /// `thinkingSignature`, `toolCall.id`, …), each once.
    pub lossy_fields: Vec<String>,
    /// Every step, in order.
    pub steps: Vec<ConversionStep>,
}

impl CompatibilityReport {
    pub fn new() -> Self {
        CompatibilityReport {
            compatible: true,
            ..Default::default()
        }
    }

    /// Records a step that lost `field` (a canonical field name).
    pub fn lossy(&mut self, code: &str, message: Option<usize>, field: &str, detail: String) {
        self.compatible = false;
        if !self.lossy_fields.iter().any(|f| f == field) {
            self.lossy_fields.push(field.to_string());
        }
        self.warn_once(code, &detail);
        self.steps.push(ConversionStep {
            code: code.to_string(),
            message,
            detail,
            lossy: true,
        });
    }

    /// Records a step that reshaped without loss.
    pub fn step(&mut self, code: &str, message: Option<usize>, detail: String) {
        self.steps.push(ConversionStep {
            code: code.to_string(),
            message,
            detail,
            lossy: false,
        });
    }

    /// Records a warning-worthy step that lost nothing the target could use.
    pub fn warn_step(&mut self, code: &str, message: Option<usize>, detail: String) {
        self.warn_once(code, &detail);
        self.step(code, message, detail);
    }

    fn warn_once(&mut self, code: &str, detail: &str) {
        let prefix = format!("{code}: ");
        if !self.warnings.iter().any(|w| w.starts_with(&prefix)) {
            self.warnings.push(format!("{prefix}{detail}"));
        }
    }

    /// Adds another report's findings (their steps pointing at `message` if given).
    pub fn merge(&mut self, other: CompatibilityReport, message: Option<usize>) {
        self.compatible &= other.compatible;
        for f in other.lossy_fields {
            if !self.lossy_fields.contains(&f) {
                self.lossy_fields.push(f);
            }
        }
        for w in other.warnings {
            let code = w.split(": ").next().unwrap_or("").to_string();
            self.warn_once(&code, w.get(code.len() + 2..).unwrap_or(""));
        }
        for mut s in other.steps {
            if message.is_some() {
                s.message = message;
            }
            self.steps.push(s);
        }
    }

    /// Whether a step with this code was recorded.
    pub fn has(&self, code: &str) -> bool {
        self.steps.iter().any(|s| s.code == code)
    }
}
