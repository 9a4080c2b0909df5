-- State keys declared secret: true in a service's state_schema (SPEC
-- §10.2, §10.5): their values are sealed by the Keeper (XChaCha20-Poly1305
-- under the secrets key file) before they reach the database, kept here as
-- a JSON object of key -> base64 ciphertext; incarnations.state and the
-- history hold **** in their place.
ALTER TABLE incarnations ADD COLUMN sealed_state TEXT NOT NULL DEFAULT '{}';
