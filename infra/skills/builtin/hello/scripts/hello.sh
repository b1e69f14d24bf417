#!/bin/sh
# Prints a greeting for the name given (default: world).
printf 'Hello, %s!\n' "${1:-world}"
