//! The `tls-server-end-point` channel binding of RFC 5929: a hash of the server's
//! certificate with the hash of its signature algorithm (SHA-256 for MD5 and SHA-1), which
//! SCRAM-SHA-256-PLUS mixes into the authentication. Only the signature algorithm's
//! identifier is read from the certificate: a short walk over its outer DER structure.

use sha2::{Digest, Sha256, Sha384, Sha512};

/// The DER bodies of the signature algorithm identifiers whose hash is known.
const SHA256_SIGNED: [&[u8]; 5] = [
    // md5WithRSAEncryption, sha1WithRSAEncryption, sha256WithRSAEncryption
    &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x04],
    &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x05],
    &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b],
    // ecdsa-with-SHA1, ecdsa-with-SHA256
    &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x01],
    &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02],
];
const SHA384_SIGNED: [&[u8]; 2] = [
    // sha384WithRSAEncryption, ecdsa-with-SHA384
    &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c],
    &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03],
];
const SHA512_SIGNED: [&[u8]; 2] = [
    // sha512WithRSAEncryption, ecdsa-with-SHA512
    &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d],
    &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04],
];

/// The binding data for a DER certificate, or `None` when its signature algorithm names
/// no hash (Ed25519, RSASSA-PSS): then SCRAM runs without channel binding.
pub(super) fn end_point_digest(cert: &[u8]) -> Option<Vec<u8>> {
    let algorithm = signature_algorithm(cert)?;
    if SHA256_SIGNED.contains(&algorithm) {
        Some(Sha256::digest(cert).to_vec())
    } else if SHA384_SIGNED.contains(&algorithm) {
        Some(Sha384::digest(cert).to_vec())
    } else if SHA512_SIGNED.contains(&algorithm) {
        Some(Sha512::digest(cert).to_vec())
    } else {
        None
    }
}

const SEQUENCE: u8 = 0x30;
const OBJECT_IDENTIFIER: u8 = 0x06;

/// `Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm SEQUENCE { OID, … }, … }`:
/// the OID's body.
fn signature_algorithm(cert: &[u8]) -> Option<&[u8]> {
    let (certificate, _) = element(cert, SEQUENCE)?;
    let (_tbs, rest) = element(certificate, SEQUENCE)?;
    let (algorithm, _) = element(rest, SEQUENCE)?;
    element(algorithm, OBJECT_IDENTIFIER).map(|(oid, _)| oid)
}

/// The body of the DER element of type `tag` at the start of `der`, and what follows it.
fn element(der: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&found, rest) = der.split_first()?;
    if found != tag {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let (bytes, rest) = rest.split_at(n);
        let len = bytes
            .iter()
            .fold(0usize, |len, &b| (len << 8) | usize::from(b));
        (len, rest)
    };
    (rest.len() >= len).then(|| rest.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A certificate's outer shape: a long-form length, a TBS part, then the algorithm.
    fn shaped(oid: &[u8]) -> Vec<u8> {
        let tbs = [vec![SEQUENCE, 0x81, 0x80], vec![0u8; 0x80]].concat();
        let algorithm = [
            vec![
                SEQUENCE,
                (oid.len() + 4) as u8,
                OBJECT_IDENTIFIER,
                oid.len() as u8,
            ],
            oid.to_vec(),
            vec![0x05, 0x00],
        ]
        .concat();
        let signature = vec![0x03, 0x02, 0x00, 0xff];
        let body = [tbs, algorithm, signature].concat();
        [
            vec![SEQUENCE, 0x82, (body.len() >> 8) as u8, body.len() as u8],
            body,
        ]
        .concat()
    }

    #[test]
    fn the_hash_follows_the_signature_algorithm() {
        let cert = shaped(SHA256_SIGNED[2]);
        assert_eq!(
            end_point_digest(&cert),
            Some(Sha256::digest(&cert).to_vec())
        );
        // SHA-1 is upgraded to SHA-256.
        let cert = shaped(SHA256_SIGNED[1]);
        assert_eq!(end_point_digest(&cert).map(|d| d.len()), Some(32));
        let cert = shaped(SHA384_SIGNED[1]);
        assert_eq!(
            end_point_digest(&cert),
            Some(Sha384::digest(&cert).to_vec())
        );
        let cert = shaped(SHA512_SIGNED[0]);
        assert_eq!(end_point_digest(&cert).map(|d| d.len()), Some(64));
    }

    #[test]
    fn unknown_algorithms_and_malformed_input_give_no_binding() {
        // Ed25519 (1.3.101.112).
        assert_eq!(end_point_digest(&shaped(&[0x2b, 0x65, 0x70])), None);
        assert_eq!(end_point_digest(&[]), None);
        assert_eq!(end_point_digest(&[SEQUENCE, 0x85, 1, 2, 3, 4, 5]), None);
        let cert = shaped(SHA256_SIGNED[2]);
        assert_eq!(end_point_digest(&cert[..cert.len() - 10]), None);
    }
}
