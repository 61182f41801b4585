//! `meta.json`: an agent's configuration as the store keeps it (FORMAT.md §14).
//! Credentials never reach it: it is scrubbed ([`crate::secrets::scrub_meta`])
//! each time it is written.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Error, Result};

/// Kode's config version, stored in `meta.json`.
pub const CONFIG_VERSION: &str = "forkpoint-1";

/// What `meta.json` keeps of a model provider (never credentials).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "AgentModelRef"))]
pub struct ModelRef {
    /// The provider, e.g. `anthropic`.
    pub provider: String,
    /// The model, e.g. `claude-sonnet-4-5`.
    pub model: String,
    /// The wire API, e.g. `anthropic-messages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub api: Option<String>,
}

/// When a tool call needs a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum PermissionMode {
    /// Every call runs.
    #[default]
    Auto,
    /// Calls ask first (every call, or those of `requireApprovalTools`).
    Approval,
}

/// Permission mode: `auto` runs every call; `approval` asks first (every call, or the tools listed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Permission {
    pub mode: PermissionMode,
    /// With `approval`: only these tools ask (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub require_approval_tools: Option<Vec<String>>,
}

/// Where a fork came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ForkedFrom {
    /// The parent agent.
    pub agent_id: String,
    /// The snapshot the fork was made from.
    pub snapshot: String,
    /// The parent's session entry the fork's history ends with.
    pub entry_id: String,
}

/// An agent's `meta.json`. Members this version does not know are kept as they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AgentMeta {
    pub agent_id: String,
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub template_id: Option<String>,
    /// ISO 8601.
    #[serde(default)]
    pub created_at: String,
    /// ISO 8601.
    #[serde(default)]
    pub updated_at: String,
    /// Ancestors, oldest first (a fork's parent last).
    #[serde(default)]
    pub lineage: Vec<String>,
    #[serde(default = "config_version")]
    pub config_version: String,
    #[serde(default)]
    pub model: ModelRef,
    /// Names of the tools the agent may call.
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub permission: Permission,
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub system_prompt: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(type = "Record<string, unknown>"))]
    pub metadata: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub forked_from: Option<ForkedFrom>,
    /// Members written by other versions, kept.
    #[serde(flatten)]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub extra: Map<String, Value>,
}

fn config_version() -> String {
    CONFIG_VERSION.to_string()
}

/// What `resume` / `resumeFromStore` may change, and what `create` starts from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct MetaChanges {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub model: Option<ModelRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub permission: Option<Permission>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub tools: Option<Vec<String>>,
    /// `null` clears it; absent keeps it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    #[cfg_attr(feature = "ts", ts(optional, type = "string | null"))]
    pub system_prompt: Option<Option<String>>,
    /// Merged into the stored metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, unknown>"))]
    pub metadata: Option<Map<String, Value>>,
}

mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Option<String>>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().and_then(Option::as_ref).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<String>>, D::Error> {
        Ok(Some(Option::<String>::deserialize(d)?))
    }
}

impl AgentMeta {
    /// Reads `meta.json` (`CORRUPTED_DATA` when it is not one, or not agent `id`'s).
    pub fn parse(text: &[u8], id: &str) -> Result<AgentMeta> {
        let m: AgentMeta = serde_json::from_slice(text)
            .map_err(|e| Error::corrupted(format!("meta.json is not an agent's meta: {e}")))?;
        if m.agent_id != id {
            return Err(Error::corrupted(format!(
                "meta.json does not describe agent '{id}'"
            )));
        }
        Ok(m)
    }

    /// The text stored: pretty JSON, credentials scrubbed.
    pub fn to_text(&self) -> Result<Vec<u8>> {
        let mut v =
            serde_json::to_value(self).map_err(|e| Error::internal(format!("meta.json: {e}")))?;
        crate::secrets::scrub_meta(&mut v);
        serde_json::to_vec_pretty(&v).map_err(|e| Error::internal(format!("meta.json: {e}")))
    }

    /// Applies changes; returns whether anything changed. A model change counts
    /// only when provider or model differ (not the api alone).
    pub fn apply(&mut self, c: &MetaChanges) -> bool {
        let mut changed = false;
        if let Some(m) = &c.model
            && (m.provider != self.model.provider || m.model != self.model.model)
        {
            self.model = m.clone();
            changed = true;
        }
        if let Some(p) = &c.permission {
            self.permission = p.clone();
            changed = true;
        }
        if let Some(t) = &c.tools {
            self.tools = t.clone();
            changed = true;
        }
        if let Some(s) = &c.system_prompt {
            self.system_prompt = s.clone();
            changed = true;
        }
        if let Some(md) = &c.metadata {
            for (k, v) in md {
                self.metadata.insert(k.clone(), v.clone());
            }
            changed = true;
        }
        changed
    }

    /// Whether a call of tool `name` needs a decision under this permission
    /// (`always`: the tool itself always asks).
    pub fn needs_approval(&self, name: &str, always: bool) -> bool {
        if always {
            return true;
        }
        match self.permission.mode {
            PermissionMode::Auto => false,
            PermissionMode::Approval => self
                .permission
                .require_approval_tools
                .as_ref()
                .is_none_or(|t| t.iter().any(|x| x == name)),
        }
    }
}
