// Command gendocs writes docs/states.md from the statemachine graph.
//
// Usage: go run ./statemachine/cmd/gendocs [-o docs/states.md] [-src statemachine]
package main

import (
	"flag"
	"log"
	"os"

	"github.com/respire-go/respire/statemachine"
)

func main() {
	out := flag.String("o", "docs/states.md", "file to write")
	src := flag.String("src", ".", "the statemachine package's source directory")
	flag.Parse()
	text, err := statemachine.Markdown(*src)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
		log.Fatal(err)
	}
}
