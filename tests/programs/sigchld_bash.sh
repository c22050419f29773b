#!/bin/bash
# SIGCHLD into bash's wait, and a subshell's exit status.
sleep 0.1 & wait; echo $?; (exit 3); echo $?
