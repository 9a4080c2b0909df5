package devmode

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// printBanner tells the user what runs where and what to type next.
func printBanner(w io.Writer, info Info) {
	rel := func(p string) string {
		if wd, err := os.Getwd(); err == nil {
			if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
				return r
			}
		}
		return p
	}
	fmt.Fprintf(w, "\nSoul Stack dev keeper is up (data in %s).\n\n", rel(info.DataDir))
	fmt.Fprintf(w, "  Keeper API  %s   (souls connect over TLS on the same port)\n", info.URL)
	fmt.Fprintf(w, "  Web UI      %s   (log in with the token)\n", info.UIURL)
	fmt.Fprintf(w, "  Token       %s\n", info.Token)
	fmt.Fprintf(w, "              admin; saved in %s\n", rel(info.TokenFile))
	if info.ConfigPath != "" {
		fmt.Fprintf(w, "  soulctl     configured in %s\n", info.ConfigPath)
	}
	if len(info.Souls) > 0 {
		fmt.Fprintf(w, "  Souls       ")
		for i, s := range info.Souls {
			if i > 0 {
				fmt.Fprint(w, ", ")
			}
			fmt.Fprintf(w, "%s [%s]", s.SID, strings.Join(s.Covens, ","))
		}
		fmt.Fprintf(w, "\n              each confined to %s/souls/N/root\n", rel(info.DataDir))
	}
	if info.Service != "" {
		fmt.Fprintf(w, "  Service     %s (examples/hello, committed to %s)\n", info.Service, rel(filepath.Join(info.DataDir, "repos", info.Service)))
	}
	fmt.Fprintf(w, "\nNext, in another terminal (soulctl is in bin/ after make build):\n\n")
	fmt.Fprintf(w, "  soulctl souls list\n")
	if info.Service != "" && len(info.Souls) > 0 {
		fmt.Fprintf(w, "  soulctl incarnation create hello-dev --service hello --covens dev --watch\n")
		fmt.Fprintf(w, "  soulctl incarnation run hello-dev --scenario greet --input '{\"greeting\": \"Good evening\"}' --watch\n")
		fmt.Fprintf(w, "  soulctl incarnation history hello-dev\n")
		fmt.Fprintf(w, "  cat %s\n", rel(filepath.Join(info.Souls[0].Root, "srv", "hello", "greeting.txt")))
	}
	fmt.Fprintf(w, "  curl -s %s/v1/souls -H \"Authorization: Bearer $(cat %s)\"\n", info.URL, rel(info.TokenFile))
	fmt.Fprintf(w, "\nCtrl-C stops the souls and the keeper; the data stays in %s (remove it to start afresh).\n", rel(info.DataDir))
}
