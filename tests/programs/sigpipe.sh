# SIGPIPE in a pipeline.
yes | head -n 3
