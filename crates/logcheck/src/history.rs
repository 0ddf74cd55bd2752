//! The history: JSON lines in, typed [`Event`]s out (and back, for generators and tests).
//!
//! Mental model: a history is the workload driver's diary. Every client call is written as an
//! `invoke` line *before* the call and one completion line (`ok`, `fail` or `info`) after it;
//! the checker never looks at the broker, only at what clients were told. One line:
//!
//! ```text
//! {"t":123,"proc":7,"type":"invoke","f":"send","value":[["send",3,101]]}
//! {"t":456,"proc":7,"type":"ok","f":"send","value":[["send",3,[4711,101]]]}
//! {"t":789,"proc":2,"type":"ok","f":"poll","value":[["poll",{"3":[[4711,101],[4712,102]]}]]}
//! {"t":999,"proc":5,"type":"info","f":"send","value":[["send",1,77]],"error":"REQUEST_TIMED_OUT"}
//! ```
//!
//! - `t`: an integer timestamp (the driver writes monotonic nanoseconds since its start; the
//!   liveness figures of the report are in the same unit). Lines are in history order; `t` is
//!   only used for the liveness figures.
//! - `proc`: a client process, an integer or a string (`"nemesis"` for fault markers).
//! - `type`: `invoke | ok | fail | info`. `fail` is *definite* (nothing happened), `info` is
//!   indefinite (it may or may not have happened); an invoke without a completion counts as
//!   `info`.
//! - `f`: `send | poll | txn` carry micro-ops in `value`: `["send", key, value]` (invoke),
//!   `["send", key, [offset, value]]` (completion; offset may be null) and `["poll"]` (invoke),
//!   `["poll", {key: [[offset, value], ...]}]` (completion). `assign | subscribe` carry a list
//!   of keys. `commit | crash` and the fault markers `fault | heal` (any `value`) complete the
//!   set; `crash` means the process's client was lost (its consumer position and producer
//!   session end).
//! - Optional fields: `error` (a string: Kafka's error name such as `REQUEST_TIMED_OUT`, or a
//!   librdkafka local error such as `_MSG_TIMED_OUT`); `final: true` on the polls (and assign)
//!   of the final drain; `idempotent: false` on a send or txn invoke of a producer without
//!   idempotence (default true: the note's safe profile). Other fields are ignored (the
//!   driver adds `errors` to polls that also returned consumer errors).
//!
//! Keys name one (topic, partition) each, as integers or strings; JSON object keys of polls are
//! strings, so `3` and `"3"` are the same [`Key`]. Send values are integers, unique per run.
//!
//! Invariant: parsing never panics and never guesses; any line that does not fit is a
//! [`HistoryError`] naming its 1-based line number. Blank lines are skipped.

use std::cmp::Ordering;
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value, json};

/// One (topic, partition), as the driver names it. Ordered numerically for decimal names
/// (shorter first, then lexicographic), so reports list `2` before `10`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Key(pub String);

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.0.len(), &self.0).cmp(&(other.0.len(), &other.0))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Key {
    /// The key's JSON form: a number when the name is one, else a string.
    pub fn to_json(&self) -> Value {
        match self.0.parse::<i64>() {
            Ok(n) if n.to_string() == self.0 => json!(n),
            _ => json!(self.0),
        }
    }
}

impl From<i64> for Key {
    fn from(n: i64) -> Self {
        Key(n.to_string())
    }
}

/// A client process: an integer or a name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(untagged)]
pub enum Proc {
    Num(i64),
    Name(String),
}

impl Proc {
    pub fn to_json(&self) -> Value {
        match self {
            Proc::Num(n) => json!(n),
            Proc::Name(s) => json!(s),
        }
    }
}

/// The `type` of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Invoke,
    Ok,
    Fail,
    Info,
}

impl Type {
    pub fn name(self) -> &'static str {
        match self {
            Type::Invoke => "invoke",
            Type::Ok => "ok",
            Type::Fail => "fail",
            Type::Info => "info",
        }
    }
}

/// The `f` of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum F {
    Send,
    Poll,
    Txn,
    Assign,
    Subscribe,
    Commit,
    Crash,
    /// A fault starts (nemesis marker).
    Fault,
    /// The faults are healed (nemesis marker); the liveness figures count from the last one.
    Heal,
}

const FS: [(&str, F); 9] = [
    ("send", F::Send),
    ("poll", F::Poll),
    ("txn", F::Txn),
    ("assign", F::Assign),
    ("subscribe", F::Subscribe),
    ("commit", F::Commit),
    ("crash", F::Crash),
    ("fault", F::Fault),
    ("heal", F::Heal),
];

impl F {
    pub fn name(self) -> &'static str {
        FS.iter()
            .find(|(_, f)| *f == self)
            .map_or("?", |(name, _)| name)
    }
}

/// `[offset, value]` pairs of one key in one poll, in the order the client returned them.
pub type Records = Vec<(i64, i64)>;

/// One micro-op of a send, poll or txn event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MicroOp {
    /// `["send", key, value]` or `["send", key, [offset, value]]`.
    Send {
        key: Key,
        offset: Option<i64>,
        value: i64,
    },
    /// `["poll"]` (`None`) or `["poll", {key: [[offset, value], ...]}]`.
    Poll(Option<Vec<(Key, Records)>>),
}

/// What an event's `value` holds, by `f`.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// send, poll, txn.
    Ops(Vec<MicroOp>),
    /// assign, subscribe (absent or null: no keys recorded).
    Keys(Vec<Key>),
    /// commit, crash, fault, heal: kept as written.
    Other(Value),
}

/// One line of the history.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// 1-based line number in the input (0 for events built in memory).
    pub line: usize,
    pub t: i64,
    pub proc: Proc,
    pub ty: Type,
    pub f: F,
    pub body: Body,
    pub error: Option<String>,
    /// Part of the final drain.
    pub final_drain: bool,
    /// The producer is idempotent (sends and txns; default true).
    pub idempotent: bool,
}

impl Event {
    /// The micro-ops (empty for other bodies).
    pub fn ops(&self) -> &[MicroOp] {
        match &self.body {
            Body::Ops(ops) => ops,
            _ => &[],
        }
    }

    /// The event as one JSON line (no trailing newline), in the format [`parse`] reads.
    pub fn to_json(&self) -> Value {
        let value = match &self.body {
            Body::Ops(ops) => Value::Array(ops.iter().map(micro_op_json).collect()),
            Body::Keys(keys) => Value::Array(keys.iter().map(Key::to_json).collect()),
            Body::Other(v) => v.clone(),
        };
        let mut m = Map::new();
        m.insert("t".into(), json!(self.t));
        m.insert("proc".into(), self.proc.to_json());
        m.insert("type".into(), json!(self.ty.name()));
        m.insert("f".into(), json!(self.f.name()));
        m.insert("value".into(), value);
        if let Some(e) = &self.error {
            m.insert("error".into(), json!(e));
        }
        if self.final_drain {
            m.insert("final".into(), json!(true));
        }
        if !self.idempotent {
            m.insert("idempotent".into(), json!(false));
        }
        Value::Object(m)
    }
}

fn micro_op_json(op: &MicroOp) -> Value {
    match op {
        MicroOp::Send { key, offset, value } => match offset {
            Some(o) => json!(["send", key.to_json(), [o, value]]),
            None => json!(["send", key.to_json(), value]),
        },
        MicroOp::Poll(None) => json!(["poll"]),
        MicroOp::Poll(Some(reads)) => {
            let mut m = Map::new();
            for (k, recs) in reads {
                let pairs: Vec<Value> = recs.iter().map(|(o, v)| json!([o, v])).collect();
                m.insert(k.0.clone(), Value::Array(pairs));
            }
            json!(["poll", Value::Object(m)])
        }
    }
}

/// Events as JSON lines, each ending in a newline.
pub fn to_jsonl(events: &[Event]) -> String {
    let mut out = String::new();
    for e in events {
        out.push_str(&e.to_json().to_string());
        out.push('\n');
    }
    out
}

/// A line that is not a history event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryError {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "history line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for HistoryError {}

type Res<T> = Result<T, String>;

/// Parses a whole history (JSON lines; blank lines skipped).
pub fn parse(text: &str) -> Result<Vec<Event>, HistoryError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let line = i + 1;
        let event = parse_line(raw).map_err(|message| HistoryError { line, message })?;
        out.push(Event { line, ..event });
    }
    Ok(out)
}

/// Parses one line (its `line` field is 0).
pub fn parse_line(raw: &str) -> Res<Event> {
    let v: Value = serde_json::from_str(raw).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(m) = v else {
        return Err("not a JSON object".into());
    };
    let t = match m.get("t") {
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .ok_or("`t` is not a number")?,
        Some(_) => return Err("`t` is not a number".into()),
        None => return Err("missing `t`".into()),
    };
    let proc = match m.get("proc") {
        Some(Value::Number(n)) => Proc::Num(n.as_i64().ok_or("`proc` is not an integer")?),
        Some(Value::String(s)) => Proc::Name(s.clone()),
        Some(_) => return Err("`proc` is neither an integer nor a string".into()),
        None => return Err("missing `proc`".into()),
    };
    let ty = match str_field(&m, "type")? {
        "invoke" => Type::Invoke,
        "ok" => Type::Ok,
        "fail" => Type::Fail,
        "info" => Type::Info,
        other => return Err(format!("unknown type {other:?} (invoke|ok|fail|info)")),
    };
    let f_name = str_field(&m, "f")?;
    let Some(&(_, f)) = FS.iter().find(|(name, _)| *name == f_name) else {
        let known: Vec<&str> = FS.iter().map(|(n, _)| *n).collect();
        return Err(format!("unknown f {f_name:?} ({})", known.join("|")));
    };
    let value = m.get("value").unwrap_or(&Value::Null);
    let body = match f {
        F::Send | F::Poll | F::Txn => Body::Ops(parse_ops(value, f)?),
        F::Assign | F::Subscribe => Body::Keys(parse_keys(value)?),
        _ => Body::Other(value.clone()),
    };
    let error = match m.get("error") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    Ok(Event {
        line: 0,
        t,
        proc,
        ty,
        f,
        body,
        error,
        final_drain: bool_field(&m, "final")?.unwrap_or(false),
        idempotent: bool_field(&m, "idempotent")?.unwrap_or(true),
    })
}

fn str_field<'a>(m: &'a Map<String, Value>, name: &str) -> Res<&'a str> {
    match m.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("`{name}` is not a string")),
        None => Err(format!("missing `{name}`")),
    }
}

fn bool_field(m: &Map<String, Value>, name: &str) -> Res<Option<bool>> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("`{name}` is not a boolean")),
    }
}

fn parse_key(v: &Value) -> Res<Key> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(Key::from)
            .ok_or_else(|| format!("key {n} is not an integer")),
        Value::String(s) => Ok(Key(s.clone())),
        other => Err(format!("key {other} is neither an integer nor a string")),
    }
}

fn parse_keys(v: &Value) -> Res<Vec<Key>> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items.iter().map(parse_key).collect(),
        other => Err(format!(
            "`value` of assign/subscribe is not a list of keys: {other}"
        )),
    }
}

fn int(v: &Value, what: &str) -> Res<i64> {
    v.as_i64()
        .ok_or_else(|| format!("{what} {v} is not an integer"))
}

fn parse_ops(v: &Value, f: F) -> Res<Vec<MicroOp>> {
    let items = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => return Err(format!("`value` is not a list of micro-ops: {other}")),
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Some(parts) = item.as_array() else {
            return Err(format!("micro-op {item} is not a list"));
        };
        let op = match (parts.first().and_then(Value::as_str), parts.len()) {
            (Some("send"), 3) => {
                let key = parse_key(&parts[1])?;
                let (offset, value) = match &parts[2] {
                    Value::Array(pair) if pair.len() == 2 => {
                        let offset = match &pair[0] {
                            Value::Null => None,
                            o => Some(int(o, "offset")?),
                        };
                        (offset, int(&pair[1], "value")?)
                    }
                    v => (None, int(v, "value")?),
                };
                MicroOp::Send { key, offset, value }
            }
            (Some("poll"), 1) => MicroOp::Poll(None),
            (Some("poll"), 2) => MicroOp::Poll(Some(parse_reads(&parts[1])?)),
            _ => {
                return Err(format!(
                    "micro-op {item} is neither [\"send\", k, v] nor [\"poll\", ...]"
                ));
            }
        };
        if matches!(
            (&op, f),
            (MicroOp::Send { .. }, F::Poll) | (MicroOp::Poll(_), F::Send)
        ) {
            return Err(format!("micro-op {item} in a {} event", f.name()));
        }
        out.push(op);
    }
    Ok(out)
}

fn parse_reads(v: &Value) -> Res<Vec<(Key, Records)>> {
    let Value::Object(m) = v else {
        return Err(format!("poll result {v} is not an object of keys"));
    };
    let mut out = Vec::with_capacity(m.len());
    for (k, recs) in m {
        let Some(recs) = recs.as_array() else {
            return Err(format!("poll result of key {k} is not a list"));
        };
        let mut pairs = Vec::with_capacity(recs.len());
        for r in recs {
            match r.as_array().map(Vec::as_slice) {
                Some([o, v]) => pairs.push((int(o, "offset")?, int(v, "value")?)),
                _ => return Err(format!("poll record {r} of key {k} is not [offset, value]")),
            }
        }
        out.push((Key(k.clone()), pairs));
    }
    Ok(out)
}
