# comment
name = 'café'
