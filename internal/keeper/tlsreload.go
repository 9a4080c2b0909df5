package keeper

import (
	"crypto/tls"
	"fmt"
)

// serveCertificate makes the listener's TLS configuration hand out the
// certificate held in k.cert, so ReloadTLS can replace it for new
// handshakes while established connections (souls' streams included) keep
// theirs.
func (k *Keeper) serveCertificate() {
	if len(k.tls.Certificates) == 0 {
		return
	}
	first := k.tls.Certificates[0]
	k.cert.Store(&first)
	// crypto/tls consults GetCertificate before Certificates only when the
	// client sent a server name: with Certificates empty it always does.
	k.tls.Certificates = nil
	k.tls.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return k.cert.Load(), nil }
}

// ReloadTLS reads the TLS certificate and key again (tls.cert/tls.key, or
// the data directory's material) and serves them to new handshakes;
// connected souls and clients keep their connections. On an error the
// current certificate stays. `keeper serve` calls it on SIGHUP.
func (k *Keeper) ReloadTLS() error {
	tc, fp, err := loadTLS(k.cfg.Keeper)
	if err != nil {
		return fmt.Errorf("reloading the TLS certificate: %w", err)
	}
	if len(tc.Certificates) == 0 {
		return fmt.Errorf("reloading the TLS certificate: no certificate loaded")
	}
	cert := tc.Certificates[0]
	k.cert.Store(&cert)
	if fp != k.fp {
		k.log.Warn("TLS certificate reloaded with another CA: souls and clients pinning the old fingerprint refuse new connections until they pin the new one",
			"fingerprint", fp, "previous", k.fp)
		return nil
	}
	k.log.Info("TLS certificate reloaded", "fingerprint", fp)
	return nil
}
