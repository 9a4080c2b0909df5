// Command hello is a main package for TestBuildBinaries.
package main

import "fmt"

func main() { fmt.Println("hello") }
