pragma circom 2.1.0;

// Matricula student credential presentation (format `groth16`). See docs/zk-groth16.md.
//
// Proves, without revealing the student secret, the expiry date or (unless asked) the level:
//   1. the issuer whose BabyJubJub key is (issuerAx, issuerAy) signed, with EdDSA-Poseidon,
//      message = Poseidon(commitment, domainHash, levelCode, validUntil, active)
//      where commitment = Poseidon(studentSecret);
//   2. unexpired = (validUntil > now), over inputs range-checked to 64 bits.
//
// The proof is bound to the session by the public input nonceField (the service computes it from
// its nonce and audience): a proof made for one nonce does not verify for another. There is no
// holder-specific output: an earlier version output tag = Poseidon(studentSecret, nonceField),
// a stable pseudonym whenever a nonce was reused, which the service never needed (issue 10,
// finding 6). Two proofs of one credential now share only what every credential of the issuer
// shares (docs/zk-groth16.md, "Unlinkability").
//
// The verifier supplies every public input itself (issuer key from its registry, its nonce,
// its clock); it never takes them from the client.

include "circomlib/circuits/poseidon.circom";
include "circomlib/circuits/eddsaposeidon.circom";
include "circomlib/circuits/comparators.circom";
include "circomlib/circuits/bitify.circom";

template StudentCredentialPresentation() {
    // Public inputs. Their declaration order is their order in the public signals.
    signal input issuerAx;
    signal input issuerAy;
    signal input domainHash;
    signal input nonceField;
    signal input now;
    signal input discloseLevel;

    // Private inputs: the credential and its signature.
    signal input studentSecret;
    signal input levelCode;
    signal input validUntil;
    signal input active;
    signal input sigR8x;
    signal input sigR8y;
    signal input sigS;

    // Outputs (they come first in the public signals).
    signal output activeOut;
    signal output unexpired;
    signal output level;

    // Boolean flags: a non-boolean `active` would make `activeOut` meaningless, a
    // non-boolean `discloseLevel` would let `level` be a multiple of the code.
    active * (active - 1) === 0;
    discloseLevel * (discloseLevel - 1) === 0;

    // 1. The issuer's signature over the credential.
    component commitment = Poseidon(1);
    commitment.inputs[0] <== studentSecret;

    component message = Poseidon(5);
    message.inputs[0] <== commitment.out;
    message.inputs[1] <== domainHash;
    message.inputs[2] <== levelCode;
    message.inputs[3] <== validUntil;
    message.inputs[4] <== active;

    component signature = EdDSAPoseidonVerifier();
    signature.enabled <== 1;
    signature.Ax <== issuerAx;
    signature.Ay <== issuerAy;
    signature.R8x <== sigR8x;
    signature.R8y <== sigR8y;
    signature.S <== sigS;
    signature.M <== message.out;

    // 2. validUntil > now. LessThan(64) is only sound when both inputs fit in 64 bits, so
    // both are range-checked first (a wrapped-around field element could otherwise pass).
    component nowBits = Num2Bits(64);
    nowBits.in <== now;
    component validUntilBits = Num2Bits(64);
    validUntilBits.in <== validUntil;

    component notExpired = LessThan(64);
    notExpired.in[0] <== now;
    notExpired.in[1] <== validUntil;
    unexpired <== notExpired.out;

    // 3. The session binding. nonceField takes part in no other constraint; snarkjs's setup
    // already binds every public input to the proof, and this square (as in Tornado Cash's
    // recipient binding) keeps it bound even with a prover or setup that does not.
    signal nonceSquare;
    nonceSquare <== nonceField * nonceField;

    activeOut <== active;
    level <== discloseLevel * levelCode;
}

component main {public [issuerAx, issuerAy, domainHash, nonceField, now, discloseLevel]} = StudentCredentialPresentation();
