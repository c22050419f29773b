# A trap handler in the shell itself.
trap 'echo got' USR1; kill -USR1 $$; echo after
