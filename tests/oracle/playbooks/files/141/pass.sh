#!/bin/sh
# The vault password of fixture 141, printed as a password script does.
echo script-pw
