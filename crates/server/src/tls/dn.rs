//! A certificate subject as Java's `X500Principal.getName()` prints it (RFC 2253), the string
//! Kafka's `ssl.principal.mapping.rules` are written against (issue 19).
//!
//! Mental model (the JDK's `X500Name.getRFC2253Name` / `AVA.toRFC2253String`):
//! - RDNs in reverse encoding order, most specific first: `CN=alice,OU=eng,O=acme,C=US`;
//!   the attributes of a multi-valued RDN joined by `+` in encoding order;
//! - the keyword for CN, C, L, ST, O, OU, STREET, DC and UID; any other type (emailAddress,
//!   serialNumber, ...) as its dotted OID, whose value is then `#` + the lower-case hex of the
//!   value's DER encoding (`1.2.840.113549.1.9.1=#16...`), as is any non-string value;
//! - string values with `,` `=` `+` `<` `>` `#` `;` `"` `\` escaped by `\`, NUL as `\00`,
//!   leading and trailing spaces (and CRs) escaped; other characters (non-ASCII included)
//!   as they are.
//!
//! Invariant: pure and total over a parsed certificate: an undecodable string value falls
//! back to the `#hex` form instead of failing.

use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::x509::AttributeTypeAndValue;

/// The RFC 2253 subject of a DER certificate, or why it does not parse.
pub fn subject_rfc2253(cert_der: &[u8]) -> Result<String, String> {
    let (_, cert) = X509Certificate::from_der(cert_der).map_err(|e| e.to_string())?;
    Ok(name_rfc2253(cert.subject()))
}

/// The RFC 2253 string of a parsed name (see the module doc).
pub fn name_rfc2253(name: &x509_parser::x509::X509Name<'_>) -> String {
    let rdns: Vec<String> = name
        .iter()
        .map(|rdn| {
            rdn.iter()
                .map(attribute_rfc2253)
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect();
    let mut out = String::new();
    for (i, rdn) in rdns.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(rdn);
    }
    out
}

/// Java's RFC 2253 keywords (`AVAKeyword` entries marked RFC 2253 compliant).
fn keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

// Universal tags of the string types Java prints as text (`AVA.isDerString`, non-canonical).
const TAG_UTF8: u32 = 12;
const TAG_PRINTABLE: u32 = 19;
const TAG_T61: u32 = 20;
const TAG_IA5: u32 = 22;
const TAG_GENERAL: u32 = 27;
const TAG_BMP: u32 = 30;

fn attribute_rfc2253(attr: &AttributeTypeAndValue<'_>) -> String {
    let oid = attr.attr_type().to_id_string();
    let value = attr.attr_value();
    let text = match keyword(&oid) {
        Some(_) => string_value(value),
        None => None,
    };
    match (keyword(&oid), text) {
        (Some(kw), Some(text)) => format!("{kw}={}", escape(&text)),
        (kw, _) => format!("{}=#{}", kw.unwrap_or(&oid), hex(&der_of(value))),
    }
}

fn string_value(value: &x509_parser::der_parser::asn1_rs::Any<'_>) -> Option<String> {
    use x509_parser::der_parser::asn1_rs::Class;
    if value.header.class() != Class::Universal || value.header.is_constructed() {
        return None;
    }
    let data = value.data;
    match value.header.tag().0 {
        TAG_UTF8 => std::str::from_utf8(data).ok().map(str::to_string),
        TAG_PRINTABLE | TAG_IA5 | TAG_T61 | TAG_GENERAL => {
            Some(data.iter().map(|&b| char::from(b)).collect())
        }
        TAG_BMP => {
            if !data.len().is_multiple_of(2) {
                return None;
            }
            let units: Vec<u16> = data
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    }
}

fn escape(value: &str) -> String {
    const ESCAPEES: &str = ",=+<>#;\"\\";
    let mut chars: Vec<String> = Vec::with_capacity(value.len());
    for c in value.chars() {
        if ESCAPEES.contains(c) {
            chars.push(format!("\\{c}"));
        } else if c == '\0' {
            chars.push("\\00".to_string());
        } else {
            chars.push(c.to_string());
        }
    }
    // Leading and trailing spaces / CRs are escaped (after the escaping above, as Java does).
    let is_ws = |s: &String| s == " " || s == "\r";
    let lead = chars.iter().take_while(|s| is_ws(s)).count();
    let trail = chars.iter().rev().take_while(|s| is_ws(s)).count();
    let n = chars.len();
    let mut out = String::with_capacity(value.len() + 4);
    for (i, s) in chars.iter().enumerate() {
        if i < lead || i >= n - trail {
            out.push('\\');
        }
        out.push_str(s);
    }
    out
}

/// The DER encoding (tag, length, content) of a parsed value.
fn der_of(value: &x509_parser::der_parser::asn1_rs::Any<'_>) -> Vec<u8> {
    let data = value.data;
    let mut out = Vec::with_capacity(data.len() + 6);
    match value.header.raw_tag() {
        Some(raw) => out.extend_from_slice(raw),
        None => {
            let class = (value.header.class() as u8) << 6;
            let constructed = if value.header.is_constructed() {
                0x20
            } else {
                0
            };
            // Tags above 30 use the long form, which x509 names never need; clamp.
            let tag = u8::try_from(value.header.tag().0).unwrap_or(0x1F).min(0x1E);
            out.push(class | constructed | tag);
        }
    }
    let len = data.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(data);
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert_with(dn: &[(rcgen::DnType, &str)]) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (t, v) in dn {
            params.distinguished_name.push(t.clone(), *v);
        }
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn subjects_as_java_prints_them() {
        use rcgen::DnType::*;
        let email = rcgen::DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]);
        let table: Vec<(Vec<(rcgen::DnType, &str)>, &str)> = vec![
            (
                vec![
                    (CountryName, "US"),
                    (OrganizationName, "acme"),
                    (OrganizationalUnitName, "eng"),
                    (CommonName, "alice"),
                ],
                "CN=alice,OU=eng,O=acme,C=US",
            ),
            (
                vec![
                    (LocalityName, "Fulton"),
                    (StateOrProvinceName, "MD"),
                    (CommonName, "x"),
                ],
                "CN=x,ST=MD,L=Fulton",
            ),
            // Escapes: specials anywhere, leading/trailing spaces.
            (vec![(CommonName, "Tkac, Adam")], "CN=Tkac\\, Adam"),
            (
                vec![(CommonName, "a=b+c<d>e#f;g\"h\\i")],
                "CN=a\\=b\\+c\\<d\\>e\\#f\\;g\\\"h\\\\i",
            ),
            (vec![(CommonName, " pad ")], "CN=\\ pad\\ "),
            (vec![(CommonName, "#x")], "CN=\\#x"),
            // Non-ASCII and characters outside PrintableString pass through.
            (vec![(CommonName, "jürgen_o@x")], "CN=jürgen_o@x"),
        ];
        for (dn, want) in table {
            assert_eq!(subject_rfc2253(&cert_with(&dn)).unwrap(), want);
        }
        // emailAddress is not an RFC 2253 keyword: dotted OID and the DER value in hex.
        let got = subject_rfc2253(&cert_with(&[(email, "a@b.c"), (CommonName, "bob")])).unwrap();
        let enc = got.strip_prefix("CN=bob,1.2.840.113549.1.9.1=#").unwrap();
        // rcgen writes custom types as UTF8String (0x0c) or IA5String (0x16), length 5.
        assert!(enc == "0c056140622e63" || enc == "16056140622e63", "{got}");
    }

    #[test]
    fn escape_table() {
        let table = [
            ("plain", "plain"),
            ("", ""),
            (" ", "\\ "),
            ("a\0b", "a\\00b"),
            ("\rx\r", "\\\rx\\\r"),
            ("x = y", "x \\= y"),
        ];
        for (raw, want) in table {
            assert_eq!(escape(raw), want, "{raw:?}");
        }
    }
}
