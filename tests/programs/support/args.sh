#!/bin/sh
echo "script $0 $*"
date +%N
